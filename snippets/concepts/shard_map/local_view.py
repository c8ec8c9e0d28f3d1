"""What the body of a shard_map sees: its own block, traced once, run on every device.

Run `python -m snippets.concepts.shard_map.local_view` to print what the page shows.
"""

# --8<-- [start:imports]
import jax
import jax.numpy as jnp
import numpy as np
from jax import P
from jax.sharding import AxisType, Mesh, NamedSharding

# --8<-- [end:imports]


def build_data() -> tuple[Mesh, jax.Array]:
    # --8<-- [start:mesh-and-data]
    mesh = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Explicit,))
    x = jax.device_put(jnp.arange(16.0), NamedSharding(mesh, P("x")))
    print(jax.typeof(x))
    print(x)
    # --8<-- [end:mesh-and-data]
    return mesh, x


def local_shapes(mesh: Mesh, x: jax.Array) -> jax.Array:
    # --8<-- [start:local-shapes]
    def double(block):
        print("the body sees", block.shape, jax.typeof(block))  # (1)!
        return block * 2

    doubled = jax.shard_map(double, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(x)
    print("the caller gets", doubled.shape, jax.typeof(doubled))
    print("same as x * 2:", np.array_equal(doubled, np.asarray(x) * 2))
    # --8<-- [end:local-shapes]
    return doubled


def debug_print(mesh: Mesh, x: jax.Array) -> jax.Array:
    # --8<-- [start:debug-print]
    def report(block):
        where = jax.lax.axis_index("x")  # (1)!
        jax.debug.print("device {i} holds {b}", i=where, b=block)  # (2)!
        return block

    same = jax.shard_map(report, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(x)
    jax.effects_barrier()  # (3)!
    # --8<-- [end:debug-print]
    return same


def main() -> None:
    mesh, x = build_data()
    local_shapes(mesh, x)
    debug_print(mesh, x)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
