"""Which device holds which slice: addressable_shards, replica_id, and bytes per device.

Run `python -m snippets.basics.named_sharding.shards` to print what the page shows.
"""

# --8<-- [start:imports]
import jax
from jax import P
from jax.sharding import Mesh, NamedSharding

# --8<-- [end:imports]


# --8<-- [start:print-shards]
def print_shards(array: jax.Array) -> None:
    """Print one line per device: which slice of `array` it holds."""
    if not isinstance(array, jax.Array):
        raise TypeError(
            f"print_shards needs a jax.Array, got {type(array).__name__}: "
            "place it with jax.device_put(array, NamedSharding(mesh, spec))."
        )
    rows = [["device", "index", "shape", "replica_id"]]
    for shard in sorted(array.addressable_shards, key=lambda s: s.device.id):
        spans = [f"{d.start}:{d.stop}" if d.stop else ":" for d in shard.index]
        index = "[" + ", ".join(spans) + "]"  # (1)!
        row = (shard.device, index, shard.data.shape, shard.replica_id)  # (2)!
        rows.append([str(cell) for cell in row])
    widths = [max(map(len, column)) for column in zip(*rows, strict=True)]
    for row in rows:
        cells = [c.ljust(w) for c, w in zip(row, widths, strict=True)]
        print("  ".join(cells).rstrip())


# --8<-- [end:print-shards]


def split_shards(x_rows: jax.Array) -> None:
    # --8<-- [start:split]
    print_shards(x_rows)
    # --8<-- [end:split]


def partly_replicated(x: jax.Array, mesh_2x4: Mesh) -> jax.Array:
    # --8<-- [start:halves]
    x_halves = jax.device_put(x, NamedSharding(mesh_2x4, P("x")))
    print_shards(x_halves)
    # --8<-- [end:halves]
    return x_halves


def replicated(x: jax.Array, mesh_2x4: Mesh) -> jax.Array:
    # --8<-- [start:replicated]
    x_full = jax.device_put(x, NamedSharding(mesh_2x4, P()))
    print_shards(x_full)
    # --8<-- [end:replicated]
    return x_full


def bytes_per_device(
    x: jax.Array, x_rows: jax.Array, x_halves: jax.Array, x_full: jax.Array
) -> None:
    # --8<-- [start:memory]
    print(f"the whole array: {x.nbytes} bytes\n")
    print(f"{'placement':<26}{'per device':>11}{'all devices':>13}")
    for name, placed in [
        ("P('x') on the (8,) mesh", x_rows),
        ("P('x') on the (2, 4) mesh", x_halves),
        ("P() on the (2, 4) mesh", x_full),
    ]:
        sizes = [shard.data.nbytes for shard in placed.addressable_shards]
        print(f"{name:<26}{max(sizes):>11}{sum(sizes):>13}")
    # --8<-- [end:memory]


def main() -> None:
    from snippets.basics.named_sharding import place_arrays

    mesh_8, mesh_2x4, _ = place_arrays.build_meshes()
    x = place_arrays.unplaced_array()
    _, x_rows = place_arrays.put_on_mesh(x, mesh_8)
    split_shards(x_rows)
    x_halves = partly_replicated(x, mesh_2x4)
    x_full = replicated(x, mesh_2x4)
    bytes_per_device(x, x_rows, x_halves, x_full)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
