"""PartitionSpec entries: axis names, None, several axes on one dimension, short specs and P().

Run `python -m snippets.basics.partition_spec.spec_entries` to print what the page shows.
"""

# --8<-- [start:imports]
import math

import jax
import jax.numpy as jnp
from jax import P
from jax.sharding import AxisType, Mesh, NamedSharding

# --8<-- [end:imports]


def build_mesh() -> Mesh:
    # --8<-- [start:make-mesh]
    mesh = jax.make_mesh(
        (2, 4), ("x", "y"), axis_types=(AxisType.Explicit, AxisType.Explicit)
    )
    print(dict(mesh.shape))
    print(mesh.device_ids)
    # --8<-- [end:make-mesh]
    return mesh


def first_spec(mesh: Mesh) -> NamedSharding:
    # --8<-- [start:first-spec]
    spec = P("x", "y")  # (1)!
    for dim, entry in enumerate(spec):
        print(f"dimension {dim}: {mesh.shape[entry]} pieces along mesh axis {entry!r}")
    print("P is jax.sharding.PartitionSpec:", P is jax.sharding.PartitionSpec)

    sharding = NamedSharding(mesh, spec)  # (2)!
    print("each device holds a block of shape", sharding.shard_shape((8, 16)))
    jax.debug.visualize_sharding((8, 16), sharding)  # (3)!
    # --8<-- [end:first-spec]
    return sharding


# --8<-- [start:shard-shape-table]
def shard_shape_table(shape, mesh, specs):
    """Print each spec's per-device block shape and how many devices share it."""
    shape, specs = tuple(shape), list(specs)
    if not shape or not all(isinstance(n, int) and n > 0 for n in shape):
        raise ValueError(f"shape must be positive whole numbers, got {shape!r}.")
    if not specs or not all(isinstance(spec, P) for spec in specs):
        raise ValueError(f"specs must be one or more P(...), got {specs!r}.")
    shards = {}
    for spec in specs:
        if len(spec) > len(shape):  # JAX would raise a bare IndexError
            raise ValueError(f"{spec}: more entries than {shape} has dimensions.")
        try:
            shards[spec] = NamedSharding(mesh, spec).shard_shape(shape)
        except Exception as err:  # unknown/repeated axis, indivisible size
            raise ValueError(f"{spec} does not fit {shape}: {err}") from err

    width = max(len(str(spec)) for spec in shards)
    print(f"{'spec':<{width}}  {'shard shape':<11}  copies")
    for spec, shard in shards.items():
        copies = mesh.size * math.prod(shard) // math.prod(shape)
        print(f"{spec!s:<{width}}  {shard!s:<11}  {copies}")
    return shards


# --8<-- [end:shard-shape-table]


def shard_shapes(mesh: Mesh) -> dict:
    # --8<-- [start:shard-shapes]
    shards = shard_shape_table(
        (8, 16),
        mesh,
        [
            P("x", "y"),
            P("y", "x"),
            P("x", None),
            P(None, "y"),
            P(("x", "y"), None),
            P(None, ("x", "y")),
            P("x"),
            P(),
        ],
    )
    # --8<-- [end:shard-shapes]
    return shards


def none_entries(mesh: Mesh) -> list[NamedSharding]:
    # --8<-- [start:none-entries]
    for spec in (P("x", None), P(None, "y")):
        print(spec)
        jax.debug.visualize_sharding((8, 16), NamedSharding(mesh, spec))
    # --8<-- [end:none-entries]
    return [NamedSharding(mesh, P("x", None)), NamedSharding(mesh, P(None, "y"))]


def two_axes_on_one_dimension(mesh: Mesh) -> dict:
    # --8<-- [start:two-axes-one-dimension]
    orders = {}
    for spec in (P(("x", "y")), P(("y", "x"))):
        orders[spec] = NamedSharding(mesh, spec)
        print(spec, "-> each device holds", orders[spec].shard_shape((8,)))
        jax.debug.visualize_sharding((8,), orders[spec])
    # --8<-- [end:two-axes-one-dimension]
    return orders


def orders_do_not_mix(mesh: Mesh) -> jax.Array:
    # --8<-- [start:order-matters]
    a = jax.device_put(jnp.arange(8.0), NamedSharding(mesh, P(("x", "y"))))
    b = jax.device_put(jnp.arange(8.0), NamedSharding(mesh, P(("y", "x"))))
    try:
        a + b
    except Exception as err:  # (1)!
        print(f"{type(err).__name__}: {err}")

    total = a + jax.reshard(b, a.sharding)  # (2)!
    print(jax.typeof(total), total)
    # --8<-- [end:order-matters]
    return total


def short_specs(mesh: Mesh) -> tuple[NamedSharding, NamedSharding]:
    # --8<-- [start:short-spec]
    short = NamedSharding(mesh, P("x"))
    spelled_out = NamedSharding(mesh, P("x", None))
    print("P('x') on (8, 16):      ", short.shard_shape((8, 16)))
    print("P('x', None) on (8, 16):", spelled_out.shard_shape((8, 16)))
    print("P('x') on (8, 16, 3):   ", short.shard_shape((8, 16, 3)))
    print("same layout:", short.is_equivalent_to(spelled_out, 2))  # (1)!
    print("equal specs:", short.spec == spelled_out.spec)
    # --8<-- [end:short-spec]
    return short, spelled_out


def replicated(mesh: Mesh) -> NamedSharding:
    # --8<-- [start:replicated]
    everywhere = NamedSharding(mesh, P())
    print("each device holds", everywhere.shard_shape((8, 16)))
    print("fully replicated:", everywhere.is_fully_replicated)
    jax.debug.visualize_sharding((8, 16), everywhere)
    # --8<-- [end:replicated]
    return everywhere


def unused_axis(mesh: Mesh) -> jax.Array:
    # --8<-- [start:unused-axis]
    table = jnp.arange(32.0).reshape(8, 4)
    placed = jax.device_put(table, NamedSharding(mesh, P("x")))  # no "y" in the spec
    print(jax.typeof(placed))
    for shard in placed.addressable_shards:
        rows = shard.index[0]
        print(f"CPU {shard.device.id} holds rows {rows.start}-{rows.stop - 1}")
    # --8<-- [end:unused-axis]
    return placed


def main() -> None:
    mesh = build_mesh()
    first_spec(mesh)
    shard_shapes(mesh)
    none_entries(mesh)
    two_axes_on_one_dimension(mesh)
    orders_do_not_mix(mesh)
    short_specs(mesh)
    replicated(mesh)
    unused_axis(mesh)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
