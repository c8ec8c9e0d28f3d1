"""On Explicit mesh axes the sharding is in the type: jax.typeof, at trace time.

Run `python -m snippets.concepts.explicit_sharding.sharding_in_types` to print what the page shows.
"""

# --8<-- [start:imports]
import math

import jax
import jax.numpy as jnp
from jax import P
from jax.sharding import AxisType, Mesh, NamedSharding

# --8<-- [end:imports]


def build_mesh() -> Mesh:
    # --8<-- [start:explicit-mesh]
    explicit = AxisType.Explicit
    mesh = jax.make_mesh((2, 4), ("x", "y"), axis_types=(explicit, explicit))
    print(mesh)
    # --8<-- [end:explicit-mesh]
    return mesh


# --8<-- [start:arange-on]
def arange_on(mesh: Mesh, shape: tuple[int, ...], spec: P) -> jax.Array:
    """0., 1., 2., ... in `shape`, placed on `mesh` as `spec` says."""
    if set(mesh.axis_types) != {AxisType.Explicit}:
        raise ValueError(
            f"The mesh has axis types {mesh.axis_types}; this page needs "
            "Explicit axes: jax.make_mesh(..., "
            "axis_types=(AxisType.Explicit,) * n)."
        )
    if len(spec) > len(shape):
        raise ValueError(f"{spec} has more entries than {shape} has axes.")
    sharding = NamedSharding(mesh, spec)  # (1)!
    sharding.shard_shape(shape)  # (2)!
    values = jnp.arange(math.prod(shape), dtype=jnp.float32).reshape(shape)
    return jax.device_put(values, sharding)


# --8<-- [end:arange-on]


def types_outside_jit(mesh: Mesh) -> tuple[jax.Array, jax.Array]:
    # --8<-- [start:typeof]
    x = arange_on(mesh, (8, 4), P("x", "y"))
    by_rows = arange_on(mesh, (8, 4), P("x", None))
    print("x:      ", jax.typeof(x))
    print("by_rows:", jax.typeof(by_rows))
    # --8<-- [end:typeof]
    return x, by_rows


def types_while_tracing(x: jax.Array, by_rows: jax.Array) -> list[jax.Array]:
    # --8<-- [start:trace-time]
    @jax.jit
    def double(a):
        print("  tracing double: a is", jax.typeof(a))  # (1)!
        return 2 * a

    results = []
    for name, arg in [("x", x), ("x + 1", x + 1), ("by_rows", by_rows)]:
        print(f"double({name})")
        results.append(double(arg))
    # --8<-- [end:trace-time]
    return results


def main() -> None:
    mesh = build_mesh()
    x, by_rows = types_outside_jit(mesh)
    types_while_tracing(x, by_rows)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
