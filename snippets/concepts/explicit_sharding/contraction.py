"""A matmul over a split dimension: ambiguous on Explicit axes until out_sharding says.

Run `python -m snippets.concepts.explicit_sharding.contraction` to print what the page shows.
"""

# --8<-- [start:imports]
import jax
import jax.numpy as jnp
from jax import P
from jax.sharding import NamedSharding

# --8<-- [end:imports]
from snippets.concepts.explicit_sharding.propagation_rules import show_types
from snippets.concepts.explicit_sharding.sharding_in_types import arange_on

Mesh = jax.sharding.Mesh  # for the type hints; the page's code does not use it


def ambiguous(x: jax.Array, mesh: Mesh) -> jax.Array:
    # --8<-- [start:ambiguous]
    w = arange_on(mesh, (4, 8), P("y", None))
    print("x:", jax.typeof(x), " w:", jax.typeof(w))
    try:
        x @ w
    except Exception as err:  # ShardingTypeError, not exported by jax
        print(f"{type(err).__name__}: {err}")
    # --8<-- [end:ambiguous]
    return w


def whole_rows(x: jax.Array, w: jax.Array, mesh: Mesh) -> jax.Array:
    # --8<-- [start:out-sharding-rows]
    rows = NamedSharding(mesh, P("x", None))
    xw = show_types(lambda a, b: jnp.matmul(a, b, out_sharding=rows), x, w)
    # --8<-- [end:out-sharding-rows]
    return xw


def blocks(x: jax.Array, w: jax.Array, mesh: Mesh) -> jax.Array:
    # --8<-- [start:out-sharding-blocks]
    grid = NamedSharding(mesh, P("x", "y"))

    def project(a, b):
        return jnp.einsum("ik,kj->ij", a, b, out_sharding=grid)

    xw = show_types(project, x, w)
    # --8<-- [end:out-sharding-blocks]
    return xw


def main() -> None:
    from snippets.concepts.explicit_sharding import sharding_in_types

    mesh = sharding_in_types.build_mesh()
    x, _ = sharding_in_types.types_outside_jit(mesh)
    w = ambiguous(x, mesh)
    whole_rows(x, w, mesh)
    blocks(x, w, mesh)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
