"""shard_map shards physically: a mesh, the rows placed on it, one program per device.

Run `python -m snippets.concepts.shard_map_vs_vmap.sharding` to print what the page shows (drawn
in the terminal; the site turns the drawing into SVG).
"""

# --8<-- [start:imports]
import jax
import jax.numpy as jnp
import numpy as np
from jax import P
from jax.sharding import AxisType, Mesh, NamedSharding

# --8<-- [end:imports]


def place_rows(x: jax.Array) -> tuple[Mesh, jax.Array]:
    # --8<-- [start:mesh]
    mesh = jax.make_mesh((8,), ("rows",), axis_types=(AxisType.Explicit,))
    x_rows = jax.device_put(x, NamedSharding(mesh, P("rows")))  # (1)!
    print(jax.typeof(x_rows))
    print("each device holds", x_rows.addressable_shards[0].data.shape)
    # --8<-- [end:mesh]
    return mesh, x_rows


def shard_rows(mesh: Mesh, x_rows: jax.Array, expected: np.ndarray) -> tuple:
    # --8<-- [start:shard-map]
    def per_device(block):  # (1)!
        print("one device's block:", jax.typeof(block))
        return jnp.sum(block**2, axis=1)  # (2)!

    sharded = jax.shard_map(
        per_device, mesh=mesh, in_specs=P("rows"), out_specs=P("rows")
    )
    shard_map_result = sharded(x_rows)
    print(shard_map_result)
    print("matches NumPy:", np.allclose(shard_map_result, expected))
    print("type:", jax.typeof(shard_map_result))
    # --8<-- [end:shard-map]
    return sharded, shard_map_result


def draw(shard_map_result: jax.Array) -> None:
    # --8<-- [start:draw]
    jax.debug.visualize_array_sharding(shard_map_result)
    # --8<-- [end:draw]


def unplaced_input(sharded, x: jax.Array) -> None:
    # --8<-- [start:unplaced]
    try:
        sharded(x)  # x itself, still whole on device 0
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:unplaced]


def main() -> None:
    from snippets.concepts.shard_map_vs_vmap import batching

    x, expected = batching.make_batch()
    mesh, x_rows = place_rows(x)
    sharded, shard_map_result = shard_rows(mesh, x_rows, expected)
    draw(shard_map_result)
    unplaced_input(sharded, x)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
