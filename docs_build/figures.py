"""Figures a page draws from its own arrays and compiled programs (`<!-- draw: ... -->`).

- `blocks(title, (label, array), ...)`: each array as a rectangle in its own aspect ratio, cut
  into the blocks its `addressable_shards` hold, each block labelled with the devices that hold
  it, and each dimension labelled with the mesh axes that cut it (from its sharding's spec).
- `step_flow(compiled, model, title)`: the collectives of a compiled training step in the order
  the program runs them, with the compute between them, each gather named by the parameter it
  makes whole (matched by shape against the model's parameters).

Device colours are the collectives page's (`render.DEVICE_COLOURS`); the stylesheet swaps them
for the dark scheme's by matching the colour written inline, as it does for `per_device_table`.
Text is 13 px in a drawing at most 360 units wide, so it stays above 11 px on a 390 px phone.
"""

from __future__ import annotations

import html
import math
import re

FONT, WIDTH, PAD = 13, 360, 8
LINE = FONT + 5
MAX_H = 150  # the tallest an array is drawn
MIN_SIDE = 20  # the thinnest: a label must fit; thinner arrays are widened, and say so
CHAR_W = 7.6  # a 13 px sans-serif digit or letter, generously


def _render():
    # Imported here: render imports this module to list its drawings.
    from docs_build import render

    return render


def _colour(device_id: int) -> str:
    colours = _render().DEVICE_COLOURS
    return colours[device_id % len(colours)]


def _dims(array) -> tuple[int, int]:
    if array.ndim == 1:
        return 1, array.shape[0]
    if array.ndim == 2:
        return array.shape
    raise ValueError(f"blocks draws 1-D and 2-D arrays; got shape {array.shape}")


def _span(index: slice, size: int) -> tuple[int, int]:
    start, stop, _ = index.indices(size)
    return start, stop


def array_blocks(array) -> list[tuple[tuple[tuple[int, int], ...], list[int]]]:
    """Each distinct block of `array`: its (start, stop) per dimension and the ids of the
    devices that hold it, in the order of its addressable_shards."""
    held: dict[tuple, list[int]] = {}
    for shard in array.addressable_shards:
        spans = tuple(
            _span(i, n) for i, n in zip(shard.index, array.shape, strict=True)
        )
        held.setdefault(spans, []).append(shard.device.id)
    return [(spans, sorted(ids)) for spans, ids in sorted(held.items())]


def _axis_names(entry) -> tuple[str, ...]:
    if entry is None:
        return ()
    return tuple(entry) if isinstance(entry, tuple) else (entry,)


def dimension_cuts(array) -> list[str]:
    """One phrase per dimension: the mesh axes that cut it, from the array's spec."""
    sharding = array.sharding
    spec = tuple(sharding.spec) + (None,) * (array.ndim - len(sharding.spec))
    sizes = dict(sharding.mesh.shape)
    phrases = []
    for d, (n, entry) in enumerate(zip(array.shape, spec, strict=True)):
        names = _axis_names(entry)
        if names:
            pieces = math.prod(sizes[a] for a in names)
            over = ", ".join(names)
            phrases.append(f"dim {d} ({n}): split over {over}, {pieces} pieces")
        else:
            phrases.append(f"dim {d} ({n}): whole")
    return phrases


def _copies(array) -> str | None:
    sharding = array.sharding
    used = {a for entry in sharding.spec for a in _axis_names(entry)}
    left = [(a, n) for a, n in sharding.mesh.shape.items() if a not in used and n > 1]
    if not left:
        return None
    return "copies along " + ", ".join(f"{a} ({n})" for a, n in left)


def _ranges(ids: list[int]) -> str:
    if len(ids) > 2 and ids == list(range(ids[0], ids[-1] + 1)):
        return f"{ids[0]}-{ids[-1]}"
    return ", ".join(map(str, ids))


def _label(ids: list[int], x: float, y: float, width: float) -> str:
    """Device ids, each in its colour; a range in the text colour if they do not fit."""
    spelled = " ".join(map(str, ids))
    if len(spelled) * CHAR_W <= width - 4:
        spans = " ".join(f'<tspan fill="{_colour(i)}">{i}</tspan>' for i in ids)
    else:
        spans = html.escape(_ranges(ids))
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="middle" '
        f'dominant-baseline="central" font-weight="bold">{spans}</text>'
    )


def _array_part(label: str, array, top: float) -> tuple[list[str], float, list[str]]:
    """SVG for one array from `top` down, where it ends, and its text."""
    import jax

    rows, cols = _dims(array)
    scale = min((WIDTH - 2 * PAD) / cols, MAX_H / rows)
    width, height = cols * scale, rows * scale
    widened = width < MIN_SIDE or height < MIN_SIDE
    width, height = max(width, MIN_SIDE), max(height, MIN_SIDE)
    typed = str(jax.typeof(array))
    heading = [f"{label}: {typed}", *dimension_cuts(array)]
    if copies := _copies(array):
        heading.append(copies)
    if widened:
        heading.append("(drawn thicker than to scale)")
    parts, y = [], top
    for i, line in enumerate(heading):
        y += LINE
        weight = ' font-weight="bold"' if i == 0 else ""
        parts.append(f'<text x="{PAD}" y="{y}"{weight}>{html.escape(line)}</text>')
    y += 8
    text = [heading[0], *("  " + h for h in heading[1:])]
    blocks = array_blocks(array)
    for spans, ids in blocks:
        (r0, r1), (c0, c1) = spans if array.ndim == 2 else ((0, 1), spans[0])
        bx, by = PAD + c0 / cols * width, y + r0 / rows * height
        bw, bh = (c1 - c0) / cols * width, (r1 - r0) / rows * height
        where = ", ".join(f"{a}:{b}" for a, b in spans)
        devices = "device" if len(ids) == 1 else "devices"
        tip = f"[{where}] on {devices} {_ranges(ids)}"
        fill = _colour(ids[0]) if len(ids) == 1 else "currentColor"
        parts.append(
            f'<g class="block"><title>{html.escape(tip)}</title>'
            f'<rect x="{bx:.2f}" y="{by:.2f}" width="{bw:.2f}" height="{bh:.2f}" '
            f'fill="{fill}" fill-opacity="0.14" stroke="currentColor"/>'
            + _label(ids, bx + bw / 2, by + bh / 2, bw)
            + "</g>"
        )
        text.append(f"  block [{where}]: {devices} {_ranges(ids)}")
    return parts, y + height, text


def blocks(title: str, *arrays: tuple[str, object]) -> object:
    """The arrays as their blocks on the devices: see the module's docstring."""
    if not arrays:
        raise ValueError("blocks needs at least one (label, array) pair to draw.")
    parts, y, text = [], 0.0, [title]
    for label, array in arrays:
        drawn, y, lines = _array_part(label, array, y)
        parts += drawn
        text += lines
        y += 10
    height = math.ceil(y)
    description = " ".join(text[1:])
    svg = (
        f'<svg class="blocks" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" '
        f'height="{height}" xmlns="http://www.w3.org/2000/svg" role="img" '
        f'aria-label="{html.escape(title + ". " + description)}" font-size="{FONT}" '
        'font-family="system-ui, -apple-system, Segoe UI, Roboto, sans-serif" '
        'fill="currentColor">' + "".join(parts) + "</svg>"
    )
    return _render().Figure(svg=svg, text="\n".join(text))


# ---------------------------------------------------------------------------------------------
# A training step's collectives, in program order.

HLO_OP = re.compile(r"\s*(?:ROOT )?%\S+ = (?:\(.*?\)|\S+) ([\w-]+)\(")
COMPUTE = ("fusion", "dot", "convolution", "custom-call")


def step_sequence(compiled) -> list[tuple[str, int]]:
    """The entry computation's work in order: each collective as (kind, its position among
    the collectives), and each run of compute between them as ("compute", ops in it)."""
    from snippets.hlo import COLLECTIVES

    text = compiled if isinstance(compiled, str) else compiled.as_text()
    entry = text[text.index("\nENTRY ") :]
    entry = entry[: entry.index("\n}")]
    sequence: list[tuple[str, int]] = []
    found = 0
    for line in entry.splitlines()[1:]:
        match = HLO_OP.match(line)
        if not match:
            continue
        op = match[1]
        kind = op.removesuffix("-start")
        if kind in COLLECTIVES:
            sequence.append((kind, found))
            found += 1
        elif op in COMPUTE:
            if sequence and sequence[-1][0] == "compute":
                sequence[-1] = ("compute", sequence[-1][1] + 1)
            else:
                sequence.append(("compute", 1))
    return sequence


def _parameter_names(model) -> dict[str, list[str]]:
    """Parameter names by their whole shape written as HLO writes it, e.g. f32[32,128]."""
    import jax
    import numpy as np
    from flax import nnx

    names: dict[str, list[str]] = {}
    for path, leaf in jax.tree_util.tree_leaves_with_path(nnx.state(model, nnx.Param)):
        parts = [str(getattr(k, "key", getattr(k, "name", k))) for k in path]
        name = ".".join(p for p in parts if p != "value")
        dtype = {np.dtype("float32"): "f32", np.dtype("bfloat16"): "bf16"}.get(
            np.dtype(leaf.dtype), str(leaf.dtype)
        )
        shape = f"{dtype}[{','.join(map(str, leaf.shape))}]"
        names.setdefault(shape, []).append(name)
    return names


def _name(piece: str, names: dict[str, list[str]]) -> str:
    """The parameters of this shape, or of its transpose (a gradient may come transposed)."""
    if piece in names:
        return " / ".join(names[piece])
    dtype, dims = piece[:-1].split("[")
    flipped = f"{dtype}[{','.join(reversed(dims.split(',')))}]"
    if "," in dims and flipped in names:
        return " / ".join(n + " (transposed)" for n in names[flipped])
    return piece


KIND_NAMES = {
    "all-gather": "gather",
    "all-reduce": "all-reduce",
    "reduce-scatter": "reduce-scatter",
    "all-to-all": "all-to-all",
    "collective-permute": "permute",
}


def step_flow(compiled, model, title: str) -> object:
    """The step as an ordered list: gathers, compute, reductions, with who takes part."""
    import jax

    from snippets.hlo import read_collectives

    collectives = read_collectives(compiled)
    names = _parameter_names(model)
    items, text = (
        [],
        [title, f"{jax.default_backend().upper()} program, in the order it runs:"],
    )
    for n, (kind, at) in enumerate(step_sequence(compiled), start=1):
        if kind == "compute":
            # how many ops XLA fused depends on the CPU it compiled for: not shown
            label = "compute"
            items.append(f'<li class="compute">{html.escape(label)}</li>')
            text.append(f"{n}. {label}")
            continue
        c = collectives[at]
        if c.kind != kind:
            raise ValueError(
                f"collective {at} is a {kind} in the entry computation but the reader "
                f"returned a {c.kind}: the step has collectives outside its entry."
            )
        pieces = re.findall(r"\w+\[[\d,]*\]", c.result)
        what = ", ".join(_name(p, names) for p in pieces)
        members = c.groups[0]
        chips = "".join(
            f' <span style="color:{_colour(d)}">{d}</span>' for d in members
        )
        label = f"{KIND_NAMES.get(kind, kind)} {what}"
        items.append(
            f'<li class="collective"><b>{html.escape(label)}</b> '
            f"<code>{html.escape(c.result)}</code>, devices{chips}</li>"
        )
        text.append(f"{n}. {label} ({c.result}), devices {' '.join(map(str, members))}")
    flow = (
        '<figure class="step-flow">'
        f"<figcaption>{html.escape(title)}<br><small>{html.escape(text[1])}</small>"
        "</figcaption>"
        f"<ol>{''.join(items)}</ol></figure>"
    )
    return _render().Html(html=flow, text="\n".join(text))


DRAWINGS = {"blocks": blocks, "step_flow": step_flow}
