"""The errors a PartitionSpec that does not fit gives, read and fixed.

Run `python -m snippets.basics.partition_spec.pitfalls` to print what the page shows.
"""

# --8<-- [start:imports]
import jax
import jax.numpy as jnp
from jax import P
from jax.sharding import AxisType, Mesh, NamedSharding

# --8<-- [end:imports]
# On the page, shard_shape_table is defined by an earlier block.
from snippets.basics.partition_spec.spec_entries import shard_shape_table


def too_long_eager(mesh: Mesh) -> jax.Array:
    # --8<-- [start:too-long-eager]
    vector = jnp.arange(8.0)  # rank 1
    try:
        jax.device_put(vector, NamedSharding(mesh, P("x", "y")))  # two entries
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:too-long-eager]
    return vector


def too_long_in_jit(mesh: Mesh, vector: jax.Array) -> None:
    # --8<-- [start:too-long-jit]
    to_matrix = NamedSharding(mesh, P("x", "y"))
    double = jax.jit(lambda v: 2 * v, out_shardings=to_matrix)
    try:
        double(vector)
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:too-long-jit]


def too_long_with_none(mesh: Mesh, vector: jax.Array) -> None:
    # --8<-- [start:too-long-none]
    try:  # the extra entry is None
        jax.device_put(vector, NamedSharding(mesh, P("x", None)))
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:too-long-none]


def too_long_fixed(mesh: Mesh, vector: jax.Array) -> list[jax.Array]:
    # --8<-- [start:too-long-fix]
    fits = [
        jax.device_put(vector, NamedSharding(mesh, P("x"))),
        jax.device_put(vector, NamedSharding(mesh, P(("x", "y")))),
        jax.device_put(vector.reshape(2, 4), NamedSharding(mesh, P("x", "y"))),
    ]
    for placed in fits:
        block = placed.addressable_shards[0].data.shape
        print(f"{jax.typeof(placed)!s:<17} each device holds {block}")
    # --8<-- [end:too-long-fix]
    return fits


def indivisible() -> tuple[Mesh, jax.Array]:
    # --8<-- [start:indivisible]
    mesh8 = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Explicit,))
    batch = jnp.arange(6.0)  # 6 rows for 8 devices
    try:
        jax.device_put(batch, NamedSharding(mesh8, P("x")))
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:indivisible]
    return mesh8, batch


def pad_to_a_multiple(
    mesh8: Mesh, batch: jax.Array
) -> tuple[jax.Array, jax.Array, jax.Array]:
    # --8<-- [start:pad]
    extra = -len(batch) % 8  # (1)!
    by_rows = NamedSharding(mesh8, P("x"))
    padded = jax.device_put(jnp.pad(batch, (0, extra)), by_rows)
    real = jax.device_put(jnp.arange(len(padded)) < len(batch), by_rows)
    print(jax.typeof(padded), padded)
    print(jax.typeof(real), real)
    mean = jnp.sum(padded * real) / jnp.sum(real)  # (2)!
    print("mean of the real rows:", mean)
    # --8<-- [end:pad]
    return padded, real, mean


def smaller_axis(mesh: Mesh, batch: jax.Array) -> jax.Array:
    # --8<-- [start:smaller-axis]
    halves = jax.device_put(batch, NamedSharding(mesh, P("x")))  # "x" has 2 devices
    block = halves.addressable_shards[0].data.shape
    print(jax.typeof(halves), "each device holds", block)
    # --8<-- [end:smaller-axis]
    return halves


def unknown_axis(mesh: Mesh) -> None:
    # --8<-- [start:unknown-axis]
    try:
        NamedSharding(mesh, P("z"))
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:unknown-axis]


def known_axis(mesh: Mesh) -> dict:
    # --8<-- [start:known-axis]
    print("this mesh's axes:", mesh.axis_names)
    shards = shard_shape_table((8, 16), mesh, [P("x"), P("y")])
    # --8<-- [end:known-axis]
    return shards


def duplicate_axis(mesh: Mesh) -> None:
    # --8<-- [start:duplicate-axis]
    try:
        NamedSharding(mesh, P("x", "x"))
    except Exception as err:  # (1)!
        print(f"{type(err).__name__}: {err}")
    # --8<-- [end:duplicate-axis]


def distinct_axes(mesh: Mesh) -> dict:
    # --8<-- [start:distinct-axes]
    shards = shard_shape_table((8, 16), mesh, [P("x", "y"), P(("x", "y"), None)])
    # --8<-- [end:distinct-axes]
    return shards


def main() -> None:
    mesh = jax.make_mesh(
        (2, 4), ("x", "y"), axis_types=(AxisType.Explicit, AxisType.Explicit)
    )
    vector = too_long_eager(mesh)
    too_long_in_jit(mesh, vector)
    too_long_with_none(mesh, vector)
    too_long_fixed(mesh, vector)
    mesh8, batch = indivisible()
    pad_to_a_multiple(mesh8, batch)
    smaller_axis(mesh, batch)
    unknown_axis(mesh)
    known_axis(mesh)
    duplicate_axis(mesh)
    distinct_axes(mesh)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
