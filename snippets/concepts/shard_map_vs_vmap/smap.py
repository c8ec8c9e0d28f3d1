"""jax.smap: shard_map over one mesh axis, with vmap-style in_axes and out_axes.

Run `python -m snippets.concepts.shard_map_vs_vmap.smap` to print what the page shows.
"""

# --8<-- [start:imports]
import jax
import jax.numpy as jnp
import numpy as np
from jax import P
from jax.sharding import AxisType, Mesh, NamedSharding

# --8<-- [end:imports]
# On the page, sum_of_squares is defined by an earlier block.
from snippets.concepts.shard_map_vs_vmap.batching import sum_of_squares


def smap_signature() -> None:
    # --8<-- [start:signature]
    import inspect

    print("jax.smap exists:", hasattr(jax, "smap"))
    print("parameters:", list(inspect.signature(jax.smap).parameters))
    print("docstring:", jax.smap.__doc__.splitlines()[0])
    # --8<-- [end:signature]


def no_mesh(x_rows: jax.Array) -> tuple:
    # --8<-- [start:no-mesh]
    def block_sums(block):
        print("smap body sees:", jax.typeof(block))
        return jnp.sum(block**2, axis=1)

    per_block = jax.smap(block_sums, in_axes=0, out_axes=0, axis_name="rows")
    try:
        per_block(x_rows)
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:no-mesh]
    return block_sums, per_block


def with_mesh(
    block_sums, per_block, mesh: Mesh, x_rows: jax.Array, shard_map_result: jax.Array
) -> tuple[jax.Array, jax.Array]:
    # --8<-- [start:with-mesh]
    with jax.set_mesh(mesh):  # (1)!
        smap_result = per_block(x_rows)
        inferred = jax.smap(block_sums, out_axes=0, axis_name="rows")(x_rows)  # (2)!
    print(smap_result)
    print("type:", jax.typeof(smap_result))
    print("same as shard_map:", np.array_equal(smap_result, shard_map_result))
    print("in_axes inferred: ", np.array_equal(inferred, smap_result))
    # --8<-- [end:with-mesh]
    return smap_result, inferred


def not_vmap(mesh: Mesh, x_rows: jax.Array) -> None:
    # --8<-- [start:not-vmap]
    one_row_at_a_time = jax.smap(
        sum_of_squares, in_axes=0, out_axes=0, axis_name="rows"
    )
    with jax.set_mesh(mesh):
        try:
            one_row_at_a_time(x_rows)
        except ValueError as err:
            print(f"ValueError: {str(err).splitlines()[0]} ...")  # (1)!
    # --8<-- [end:not-vmap]


def one_axis_at_a_time() -> jax.Array:
    # --8<-- [start:nested]
    grid = jax.make_mesh((2, 4), ("a", "b"), axis_types=(AxisType.Explicit,) * 2)
    y = jnp.arange(64.0).reshape(8, 8)

    def over_b(block):  # (1)!
        print("inner body:", jax.typeof(block))
        return 2 * block

    def over_a(block):
        print("outer body:", jax.typeof(block))
        return jax.smap(over_b, in_axes=1, out_axes=1, axis_name="b")(block)

    with jax.set_mesh(grid):
        y_grid = jax.device_put(y, NamedSharding(grid, P("a", "b")))
        doubled = jax.smap(over_a, in_axes=0, out_axes=0, axis_name="a")(y_grid)
    print("result:", jax.typeof(doubled))
    print("equals 2 * y:", np.array_equal(doubled, 2 * y))
    # --8<-- [end:nested]
    return doubled


def main() -> None:
    from snippets.concepts.shard_map_vs_vmap import batching, sharding

    x, expected = batching.make_batch()
    mesh, x_rows = sharding.place_rows(x)
    _, shard_map_result = sharding.shard_rows(mesh, x_rows, expected)
    smap_signature()
    block_sums, per_block = no_mesh(x_rows)
    with_mesh(block_sums, per_block, mesh, x_rows, shard_map_result)
    not_vmap(mesh, x_rows)
    one_axis_at_a_time()


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
