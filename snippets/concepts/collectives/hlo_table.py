"""Which HLO operation each collective becomes, read from the compiled CPU program.

Run `python -m snippets.concepts.collectives.hlo_table` to print what the page shows.
"""

# --8<-- [start:imports]
import functools
import re

import rich
from rich.box import SQUARE
from rich.table import Table

# --8<-- [end:imports]
# isort: split
from collections.abc import Callable

import jax
from jax import P
from jax.sharding import Mesh, NamedSharding

# On the page, these are defined by earlier blocks.
from snippets.concepts.collectives.diagram import per_device
from snippets.hlo import count_collectives, read_collectives


# --8<-- [start:hlo-ops]
def hlo_ops(compiled):
    """Collectives in a compiled program, what they combine with, who talks."""
    hlo = compiled.as_text()
    ops = [f"{n} {op}" for op, n in count_collectives(compiled).items()]
    for op in ("partition-id", "replica-id"):  # (1)!
        ops += [op] if f" {op}(" in hlo else []
    combiners = []
    for name in re.findall(r"to_apply=%?([\w.-]+)", hlo):  # (2)!
        computation = rf"^%?{re.escape(name)} .*?^}}"
        body = re.search(computation, hlo, re.M | re.S).group()
        combiners += re.findall(r"ROOT \S+ = \S+ ([\w-]+)\(", body)
    return ops, combiners, [c.groups for c in read_collectives(compiled)]  # (3)!


# --8<-- [end:hlo-ops]


def page_examples(
    mesh: Mesh,
    mesh_2x4: Mesh,
    x: jax.Array,
    x8: jax.Array,
    total: Callable,
    row_total: Callable,
    mean: Callable,
    largest: Callable,
    gather: Callable,
    gather_tiled: Callable,
    scatter: Callable,
    shift: Callable,
    exchange: Callable,
    position: Callable,
) -> list[tuple]:
    """(name, function, data, mesh) of each collective the page's sections built."""
    # --8<-- [start:examples]
    examples = [
        ("psum", total, x, mesh),
        ("psum over y (2 x 4)", row_total, x, mesh_2x4),
        ("pmean", mean, x, mesh),
        ("pmax", largest, x, mesh),
        ("all_gather", gather, x, mesh),
        ("all_gather, tiled", gather_tiled, x, mesh),
        ("psum_scatter", scatter, x8, mesh),
        ("ppermute, ring", shift, x, mesh),
        ("all_to_all", exchange, x8, mesh),
        ("axis_index (2 x 4)", position, x, mesh_2x4),
    ]
    # --8<-- [end:examples]
    return examples


def hlo_table(examples: list[tuple]) -> dict[str, tuple[list, list, list]]:
    # --8<-- [start:hlo-table]
    table = Table("jax.lax", "HLO", "devices", box=SQUARE, title="On 8 CPU devices")
    found = {}
    for name, f, data, on in examples:
        placed = jax.device_put(data, NamedSharding(on, P(on.axis_names)))
        run = jax.jit(functools.partial(per_device, f, mesh=on))
        found[name] = hlo_ops(run.lower(placed).compile())
        ops, combiners, groups = found[name]
        hlo = ", ".join(ops) + "".join(f" ({c})" for c in combiners)
        ids = " ".join(str(g).replace(" ", "") for g in groups)  # [[0,1],[1,2]]
        talks = ids.replace("[", "{").replace("]", "}").replace("},{", "} {")  # (1)!
        table.add_row(name, hlo, talks)
    rich.print(table)
    # --8<-- [end:hlo-table]
    return found


def cost_table(examples: list[tuple]) -> dict[str, tuple[str, int, int, float]]:
    """The bytes one device sends for each example of the HLO table, by the ring model."""
    # --8<-- [start:costs]
    costs = {}
    print(f"{'jax.lax':20} {'HLO':19} {'N':>2} {'block':>6} {'result':>7} {'sent':>5}")
    for name, f, data, on in examples:
        placed = jax.device_put(data, NamedSharding(on, P(on.axis_names)))
        run = jax.jit(functools.partial(per_device, f, mesh=on))
        block = placed.addressable_shards[0].data.nbytes  # (1)!
        for c in read_collectives(run.lower(placed).compile()):
            costs[name] = (c.kind, c.group_size, block, c.result_bytes, c.wire_bytes)
            n = c.group_size or "-"  # a permute sends to one device, not a group
            print(
                f"{name:20} {c.kind:19} {n:>2} {block:>6} "
                f"{c.result_bytes:>7} {c.wire_bytes:>5.0f}"
            )
    # --8<-- [end:costs]
    return costs


def page_programs():
    """The page's meshes, data and per-collective functions, as its earlier blocks build them."""
    from snippets.concepts.collectives import (
        diagram,
        gathers,
        movement,
        positions,
        reductions,
    )

    mesh, mesh_2x4 = diagram.build_meshes()
    x, x8 = diagram.build_data(mesh)
    functions = dict(
        total=reductions.psum(mesh, x)[0],
        row_total=reductions.psum_one_axis(mesh_2x4, x)[0],
        mean=reductions.pmean(mesh, x)[0],
        largest=reductions.pmax(mesh, x)[0],
        gather=gathers.all_gather(mesh, x)[0],
        gather_tiled=gathers.all_gather_tiled(mesh, x)[0],
        scatter=gathers.psum_scatter(mesh, x8)[0],
        shift=movement.ring_shift(mesh, x)[0],
        exchange=movement.all_to_all(mesh, x8)[0],
        position=positions.axis_index(mesh_2x4, x)[0],
    )
    return (mesh, mesh_2x4, x, x8), functions


def main() -> None:
    arrays, functions = page_programs()
    examples = page_examples(*arrays, **functions)
    hlo_table(examples)
    cost_table(examples)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
