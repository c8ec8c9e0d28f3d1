"""What the compiler makes of each: devices, per-device blocks and collectives.

Run `python -m snippets.concepts.shard_map_vs_vmap.programs` to print what the page shows.
"""

# --8<-- [start:imports]
from collections.abc import Callable

import jax

# --8<-- [end:imports]
# On the page, count_collectives is defined by an earlier block.
from snippets.hlo import count_collectives


# --8<-- [start:per-device-table]
def per_device_table(programs: dict[str, tuple[Callable, jax.Array]]) -> None:
    """Compile each function for its one input; print what each device runs."""
    row = "{:<20}{:<9}{:<10}{:<11}{}".format
    print(row("program", "devices", "block in", "block out", "collectives"))
    for name, (f, arg) in programs.items():
        if not isinstance(arg, jax.Array):
            raise TypeError(
                f"{name}: got a {type(arg).__name__}, not a jax.Array. "
                "jax.device_put it first: its placement decides the program."
            )
        compiled = jax.jit(f).lower(arg).compile()
        (in_sharding,), _ = compiled.input_shardings  # (1)!
        out = compiled.out_info
        devices = len(out.sharding.device_set)
        block_in = in_sharding.shard_shape(arg.shape)
        block_out = out.sharding.shard_shape(out.shape)
        found = count_collectives(compiled) or "none"
        print(row(name, devices, str(block_in), str(block_out), str(found)))


# --8<-- [end:per-device-table]


def compare_programs(batched, rows_per_device, x: jax.Array, x_rows: jax.Array) -> None:
    # --8<-- [start:programs]
    per_device_table(
        {
            "vmap, x": (batched, x),
            "vmap, x_rows": (batched, x_rows),
            "shard_map, x_rows": (rows_per_device, x_rows),
        }
    )
    # --8<-- [end:programs]


def rows_jaxpr(batched, x_rows: jax.Array):
    # --8<-- [start:rows-jaxpr]
    jaxpr = jax.make_jaxpr(batched)(x_rows)
    print(jaxpr)
    # --8<-- [end:rows-jaxpr]
    return jaxpr


def main() -> None:
    from snippets.concepts.shard_map_vs_vmap import batching, nested, sharding

    x, expected = batching.make_batch()
    batched, _ = batching.vmap_rows(x, expected)
    mesh, x_rows = sharding.place_rows(x)
    _, shard_map_result = sharding.shard_rows(mesh, x_rows, expected)
    rows_per_device, _ = nested.vmap_inside(mesh, x_rows, shard_map_result)
    compare_programs(batched, rows_per_device, x, x_rows)
    rows_jaxpr(batched, x_rows)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
