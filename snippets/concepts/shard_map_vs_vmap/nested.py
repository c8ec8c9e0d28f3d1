"""vmap inside a shard_map body: each device vmaps over its own rows.

Run `python -m snippets.concepts.shard_map_vs_vmap.nested` to print what the page shows.
"""

# --8<-- [start:imports]
import jax
import numpy as np
from jax import P
from jax.sharding import Mesh

# --8<-- [end:imports]
# On the page, sum_of_squares is defined by an earlier block.
from snippets.concepts.shard_map_vs_vmap.batching import sum_of_squares


def vmap_inside(mesh: Mesh, x_rows: jax.Array, shard_map_result: jax.Array) -> tuple:
    # --8<-- [start:vmap-inside]
    rows_per_device = jax.shard_map(
        jax.vmap(sum_of_squares),  # (1)!
        mesh=mesh,
        in_specs=P("rows"),
        out_specs=P("rows"),
    )
    nested_result = rows_per_device(x_rows)
    print(nested_result)
    print("same as before:", np.array_equal(nested_result, shard_map_result))
    print("type:", jax.typeof(nested_result))
    # --8<-- [end:vmap-inside]
    return rows_per_device, nested_result


def nested_jaxpr(rows_per_device, x_rows: jax.Array) -> None:
    # --8<-- [start:nested-jaxpr]
    print(jax.make_jaxpr(rows_per_device)(x_rows))
    # --8<-- [end:nested-jaxpr]


def forgot_vmap(mesh: Mesh, x_rows: jax.Array) -> None:
    # --8<-- [start:forgot-vmap]
    whole_block = jax.shard_map(
        sum_of_squares, mesh=mesh, in_specs=P("rows"), out_specs=P("rows")
    )
    try:
        whole_block(x_rows)
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:forgot-vmap]


def main() -> None:
    from snippets.concepts.shard_map_vs_vmap import batching, sharding

    x, expected = batching.make_batch()
    mesh, x_rows = sharding.place_rows(x)
    _, shard_map_result = sharding.shard_rows(mesh, x_rows, expected)
    rows_per_device, _ = vmap_inside(mesh, x_rows, shard_map_result)
    nested_jaxpr(rows_per_device, x_rows)
    forgot_vmap(mesh, x_rows)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
