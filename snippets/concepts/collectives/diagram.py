"""Two helpers that the collectives page uses for every drawing, and the data it draws.

`per_device` runs a function on every device's block and returns what each device held
before and after; `show_per_device` draws that as a rich table, one row per device.
Run `python -m snippets.concepts.collectives.diagram` to print what the page shows.
"""

# --8<-- [start:imports]
import jax
import jax.numpy as jnp
import numpy as np
import rich
from jax import P
from jax.sharding import AxisType, Mesh, NamedSharding
from rich.box import SQUARE
from rich.table import Table
from rich.text import Text

# --8<-- [end:imports]


def build_meshes() -> tuple[Mesh, Mesh]:
    # --8<-- [start:meshes]
    mesh = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Explicit,))
    mesh_2x4 = jax.make_mesh(
        (2, 4), ("x", "y"), axis_types=(AxisType.Explicit, AxisType.Explicit)
    )
    # --8<-- [end:meshes]
    return mesh, mesh_2x4


# --8<-- [start:per-device]
def per_device(f, x, mesh):
    """Per device: its block of `x` (before) and what `f` makes of it (after)."""
    spec = P(mesh.axis_names)  # (1)!
    if x.ndim == 0 or x.shape[0] % mesh.size:
        raise ValueError(
            f"per_device splits dimension 0 of x over all {mesh.size} devices, "
            f"so it must be a multiple of {mesh.size}; x has shape {x.shape}."
        )
    x = jax.device_put(x, NamedSharding(mesh, spec))

    def body(block):
        return block[None], f(block)[None]  # (2)!

    run = jax.shard_map(body, mesh=mesh, in_specs=spec, out_specs=(spec, spec))
    return jax.jit(run)(x)  # (3)!


# --8<-- [end:per-device]


# --8<-- [start:show-per-device]
COLOURS = [  # one per device, each with AA contrast (4.5:1) on the table's white
    "#c0392b", "#2e5f8a", "#2e7d32", "#b35900",
    "#7b4f9e", "#00796b", "#b0306a", "#7a5230",
]  # fmt: skip
CARD = "#1a1a1a on #ffffff"  # a white card, so the colours read on a dark page too


def rows_of(array):
    """(device, block) per device, from an array with one row per device."""
    shards = sorted(array.addressable_shards, key=lambda s: s.device.id)  # (1)!
    if array.ndim == 0 or any(s.data.shape[0] != 1 for s in shards):
        raise ValueError(
            "show_per_device needs one row per device, as per_device returns; "
            f"got an array of shape {array.shape}."
        )
    return [(s.device, np.asarray(s.data[0])) for s in shards]


def as_text(block, colours):
    """The numbers of a block, each in the colour `colours` gives it, if any."""
    if block.ndim == 0:
        return Text(f"{block.item():g}", style=colours.get(block.item()) or "")
    parts = [as_text(part, colours) for part in block]
    if block.ndim > 1:  # rows of a 2-D block in brackets, side by side
        return Text("").join(Text("[") + part + Text("]") for part in parts)
    return Text(" ").join(parts)


def show_per_device(before, after, title):
    """Draw what each device holds before and after: a table row per device."""
    before_rows, after_rows = rows_of(before), rows_of(after)
    # A number that only one device held before is that device's data:
    # wherever it ends up, it keeps that device's colour.
    owner = {}
    for i, (_, block) in enumerate(before_rows):
        for value in block.ravel().tolist():
            owner[value] = None if value in owner else COLOURS[i % len(COLOURS)]
    if after.dtype != before.dtype:  # (2)!
        owner = {}

    shapes = f"per device: {before_rows[0][1].shape} -> {after_rows[0][1].shape}"
    table = Table(
        "device",
        "before",
        "after",
        box=SQUARE,
        title=title,
        style=CARD,
        border_style=CARD,
        header_style=f"bold {CARD}",
        row_styles=[CARD],  # the cells too: coloured numbers sit on the white
        caption_style="italic",  # rich dims captions to a grey under AA contrast
    )
    table.caption = shapes
    table.min_width = len(title)  # so that the title fits on one line
    rows = zip(before_rows, after_rows, strict=True)
    for i, ((device, held), (_, got)) in enumerate(rows):
        colour = COLOURS[i % len(COLOURS)]
        table.add_row(
            Text(str(device), style=colour),
            as_text(held, dict.fromkeys(held.ravel().tolist(), colour)),
            as_text(got, owner),
        )
    rich.print(table)


# --8<-- [end:show-per-device]


def build_data(mesh: Mesh) -> tuple[jax.Array, jax.Array]:
    # --8<-- [start:data]
    tens = 10 * jnp.arange(8.0)[:, None]  # row d: for device d
    x = (tens + jnp.arange(2)).ravel()  # device d: 10d and 10d + 1
    x8 = (tens + jnp.arange(8)).ravel()  # device d: 10d to 10d + 7
    print(jax.typeof(x), x)
    print(jax.typeof(x8), x8.reshape(8, 8), sep="\n")
    # --8<-- [end:data]
    return x, x8


def main() -> None:
    mesh, _ = build_meshes()
    build_data(mesh)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
