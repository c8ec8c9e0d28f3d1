"""jax.set_mesh: a mesh in context, so that a bare P(...) is enough where a sharding goes.

Run `python -m snippets.concepts.explicit_sharding.mesh_context` to print what the page shows.
"""

# --8<-- [start:imports]
import jax
import jax.numpy as jnp
import numpy as np
from jax import P

# --8<-- [end:imports]

Mesh = jax.sharding.Mesh  # for the type hints; the page's code does not use it


def without_a_mesh() -> None:
    # --8<-- [start:no-mesh]
    try:
        jax.device_put(np.arange(8.0), P("x"))
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:no-mesh]


def with_a_mesh(x: jax.Array, w: jax.Array, mesh: Mesh) -> tuple[jax.Array, ...]:
    # --8<-- [start:set-mesh]
    @jax.jit
    def gather_rows(a):
        print("  inside jit:", jax.sharding.get_abstract_mesh())  # (1)!
        return jax.reshard(a, P("x", None))

    with jax.set_mesh(mesh):
        v = jax.device_put(np.arange(8.0), P("x"))  # (2)!
        xw = jnp.matmul(x, w, out_sharding=P("x", None))
        rows = gather_rows(x)
        print("v:   ", jax.typeof(v))
        print("xw:  ", jax.typeof(xw))
        print("rows:", jax.typeof(rows))
    print("after the with block:", jax.sharding.get_abstract_mesh())
    # --8<-- [end:set-mesh]
    return v, xw, rows


def main() -> None:
    from snippets.concepts.explicit_sharding import contraction, sharding_in_types

    mesh = sharding_in_types.build_mesh()
    x, _ = sharding_in_types.types_outside_jit(mesh)
    w = contraction.ambiguous(x, mesh)
    without_a_mesh()
    with_a_mesh(x, w, mesh)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
