"""Figures a page draws from its own arrays and compiled programs (`<!-- draw: ... -->`).

- `blocks(title, (label, array), ...)`: each array as a rectangle in its own aspect ratio, cut
  into the blocks its `addressable_shards` hold, each block labelled with the devices that hold
  it, and each dimension labelled with the mesh axes that cut it (from its sharding's spec).
- `step_flow(compiled, model, title)`: the collectives of a compiled training step in the order
  the program runs them, with the compute between them, each gather named by the parameter it
  makes whole (matched by shape against the model's parameters).
- `arrows(f, before, after, title)`: one collective as a row of devices before and a row
  after, with an arrow for every piece of data that moves: which collective and which device
  groups come from compiling `f` as the collectives page runs it, where each piece goes from
  the two arrays (and the two must agree).
- `ring_steps(compiled, mesh, title)`: which block each device holds at each step of a ring,
  from the (source, destination) pairs of the compiled program's collective-permutes.
- `dispatch(received, title)`: a mixture of experts' all-to-all, one arrow from each device
  to each expert's device as wide as the tokens it sent there, counted from the slots
  that hold a token in what each expert's device received.
- `mesh_grid(mesh, title)`: a 1-D or 2-D mesh as its grid of devices, each at its place,
  with the axes named along the grid.
- `stacked_bars(title, rows)`: bytes per device, one bar per row made of its parts, all on
  one scale.

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


def _figure(kind: str, height: float, label: str, parts: list[str], text: list[str]):
    """A drawing WIDTH wide as the site shows it: `kind` its classes, `label` its text
    alternative, `parts` its SVG elements, `text` its plain reading, line by line."""
    svg = (
        f'<svg class="{kind}" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" '
        f'height="{height}" xmlns="http://www.w3.org/2000/svg" role="img" '
        f'aria-label="{html.escape(label)}" font-size="{FONT}" '
        'font-family="system-ui, -apple-system, Segoe UI, Roboto, sans-serif" '
        'fill="currentColor">' + "".join(parts) + "</svg>"
    )
    return _render().Figure(svg=svg, text="\n".join(text))


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
    return _figure("blocks", height, title + ". " + description, parts, text)


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


# ---------------------------------------------------------------------------------------------
# One collective as arrows between a row of devices before it and a row after it.

BOX_H, LEFT = 22, 60  # a device's box; the column of the row labels
TOP_Y = 2 * LINE + 4  # the boxes before, below the heading and the device ids
BAND = 80  # the arrows' height
REDUCTIONS = ("all-reduce", "reduce-scatter")


def collective_program(f, before) -> tuple[str, list[list[int]]]:
    """The one collective `f` compiles to when each device runs it on its row of `before`
    (as the collectives page's `per_device` does): its kind and its groups as device ids,
    a permute's groups being its (source, destination) pairs."""
    import jax
    from jax import P

    from snippets.hlo import read_collectives

    mesh = before.sharding.mesh
    spec = P(mesh.axis_names)
    run = jax.shard_map(
        lambda block: f(block[0])[None], mesh=mesh, in_specs=spec, out_specs=spec
    )
    found = read_collectives(jax.jit(run).lower(before).compile())
    if len(found) != 1:
        raise ValueError(
            f"arrows draws one collective; the function compiles to {len(found)}: "
            f"{[c.kind for c in found]}."
        )
    ids = [d.id for d in mesh.devices.flat]  # partition p runs on device ids[p]
    return found[0].kind, [[ids[p] for p in group] for group in found[0].groups]


def _values(row) -> list:
    return row.ravel().tolist()


def _spell(values: list) -> str:
    return " ".join(f"{v:g}" for v in values)


def moved_pieces(
    before, after
) -> list[tuple[int, int, int, int, int, int, list]] | None:
    """Where each run of values in `after` came from: (source, first and end position in
    its row before, receiver, first and end position in its row after, values), or None
    when `after` holds a value that no single device held (new data, such as a sum)."""
    render = _render()
    rows = {d.id: _values(b) for d, b in render._device_rows(before, "before")}
    owner: dict[object, int | None] = {}
    for device, values in rows.items():
        for v in values:
            owner[v] = None if v in owner else device
    pieces: list = []
    for receiver, got in render._device_rows(after, "after"):
        for p, v in enumerate(_values(got)):
            source = owner.get(v) if after.dtype == before.dtype else None
            if source is None:
                return None
            q = rows[source].index(v)
            last = pieces[-1] if pieces else None
            if last and last[3] == receiver.id and last[0] == source and last[2] == q:
                pieces[-1] = (
                    *last[:2],
                    q + 1,
                    receiver.id,
                    last[4],
                    p + 1,
                    [*last[6], v],
                )
            else:
                pieces.append((source, q, q + 1, receiver.id, p, p + 1, [v]))
    return pieces


def _sent_pairs(kind: str, groups: list[list[int]]) -> set[tuple[int, int]]:
    if kind == "collective-permute":
        return {(s, r) for s, r in groups}
    return {(s, r) for g in groups for s in g for r in g if s != r}


def _arrow(x1: float, y1: float, x2: float, y2: float) -> str:
    """A downward arrow as path data: the line, then a chevron at its end."""
    return f"M{x1:.0f} {y1:.0f}L{x2:.0f} {y2:.0f}l-3-6m3 6l3-6"


def _sends(pieces: list) -> list[str]:
    """Each device's sends, in words: to every device at once when it sends them all the
    same values."""
    by_source: dict[int, list[tuple[int, list]]] = {}
    for s, _, _, r, _, _, values in pieces:
        by_source.setdefault(s, []).append((r, values))
    lines = []
    for s, sent in sorted(by_source.items()):
        to = [r for r, _ in sent]
        if len(sent) > 2 and all(v == sent[0][1] for _, v in sent):
            lines.append(
                f"device {s} sends {_spell(sent[0][1])} to devices {_ranges(to)}"
            )
        elif len(sent) > 2 and to == sorted(to):
            lines.append(
                f"device {s} sends one piece to each of devices {_ranges(to)} in turn: "
                + ", ".join(_spell(v) for _, v in sent)
            )
        else:
            lines.append(
                f"device {s} sends "
                + ", ".join(f"{_spell(v)} to device {r}" for r, v in sent)
            )
    return lines


def arrows(f, before, after, title: str) -> object:
    """A collective as arrows: see the module's docstring."""
    render = _render()
    kind, groups = collective_program(f, before)
    devices = [d.id for d, _ in render._device_rows(before, "before")]
    pitch = (WIDTH - LEFT - PAD) / len(devices)
    box = round(pitch - 4)
    x_of = {d: round(LEFT + i * pitch) for i, d in enumerate(devices)}
    after_rows = {d.id: _values(b) for d, b in render._device_rows(after, "after")}
    before_len = len(_values(render._device_rows(before, "before")[0][1]))
    low_y = TOP_Y + BOX_H + BAND
    where = (
        f"{len(groups)} pairs"
        if kind == "collective-permute"
        else "devices " + " | ".join(_ranges(sorted(g)) for g in groups)
    )
    heading = f"compiled: {kind}, {where}"
    text = [title, heading]
    ids = "".join(
        f'<tspan x="{x + box / 2:.0f}" fill="{_colour(d)}">{d}</tspan>'
        for d, x in x_of.items()
    )
    middle = BOX_H / 2 + 4.5
    parts = [
        f'<text x="{PAD}" y="{LINE - 4}" font-weight="bold">{html.escape(heading)}</text>'
        f'<text x="{PAD}" y="{TOP_Y + middle:.0f}">before</text>'
        f'<text x="{PAD}" y="{low_y + middle:.0f}">after</text>'
        '<g text-anchor="middle" font-weight="bold">'
        f'<text y="{TOP_Y - 6}">{ids}</text>'
        f'<text y="{low_y + BOX_H + LINE - 2}">{ids}</text></g>'
        '<g fill-opacity="0.35" stroke="currentColor">'
        + "".join(
            f'<rect x="{x}" y="{TOP_Y}" width="{box}" height="{BOX_H}" fill="{_colour(d)}"/>'
            for d, x in x_of.items()
        )
        + "</g>"
    ]
    pieces = moved_pieces(before, after)
    # What a device holds after is new data (no device's colour) unless it moved there:
    # then it takes the colour of the one device it all came from.
    fill = 'fill="none"' if pieces else 'fill="currentColor" fill-opacity="0.08"'
    for r, x in x_of.items():
        sources = {s for s, _, _, rr, *_ in pieces or [] if rr == r}
        if len(sources) == 1:
            parts.append(
                f'<rect x="{x}" y="{low_y}" width="{box}" height="{BOX_H}" '
                f'fill="{_colour(sources.pop())}" fill-opacity="0.35"/>'
            )
    outlines = "".join(f"M{x} {low_y}h{box}v{BOX_H}h-{box}z" for x in x_of.values())
    parts.append(f'<path {fill} stroke="currentColor" d="{outlines}"/>')
    paths: dict[str, list[str]] = {}
    top, low = TOP_Y + BOX_H, low_y - 1
    if kind in REDUCTIONS:
        for group in groups:
            node_x = sum(x_of[d] + box / 2 for d in group) / len(group)
            node_y = top + BAND / 2
            for d in group:
                paths.setdefault(_colour(d), []).append(
                    _arrow(x_of[d] + box / 2, top, node_x, node_y - 5)
                )
                paths.setdefault("currentColor", []).append(
                    _arrow(node_x, node_y + 5, x_of[d] + box / 2, low)
                )
            parts.append(f'<circle cx="{node_x:.0f}" cy="{node_y:.0f}" r="4"/>')
            gets = [_spell(after_rows[d]) for d in sorted(group)]
            owners = {s for s, *_ in pieces or []}
            whose = f" (device {owners.pop()}'s)" if len(owners) == 1 else ""
            text.append(
                f"devices {_ranges(sorted(group))} send their blocks to be combined; "
                + (
                    f"each gets {gets[0]}{whose}"
                    if len(set(gets)) == 1
                    else ", ".join(
                        f"device {d} gets {g}"
                        for d, g in zip(sorted(group), gets, strict=True)
                    )
                )
            )
    else:
        if pieces is None:
            raise ValueError(f"a {kind} moves data, but `after` holds new values.")
        drawn = {(s, r) for s, _, _, r, *_ in pieces if s != r}
        if drawn != _sent_pairs(kind, groups):
            raise ValueError(
                f"the arrays moved data between {sorted(drawn)}, the compiled {kind} "
                f"between {sorted(_sent_pairs(kind, groups))}."
            )
        for s, q0, q1, r, p0, p1, _ in pieces:
            paths.setdefault(_colour(s), []).append(
                _arrow(
                    x_of[s] + (q0 + q1) / 2 / before_len * box,
                    top,
                    x_of[r] + (p0 + p1) / 2 / len(after_rows[r]) * box,
                    low,
                )
            )
        text += _sends(pieces)
    parts.append(
        '<g fill="none" stroke-width="1.2">'
        + "".join(f'<path stroke="{c}" d="{"".join(d)}"/>' for c, d in paths.items())
        + "</g>"
    )
    height = low_y + BOX_H + LINE + 4
    return _figure("blocks arrows", height, ". ".join(text), parts, text)


# ---------------------------------------------------------------------------------------------
# A ring's steps: which block each device holds after each hop of its permutes.


def ring_holdings(compiled, mesh) -> tuple[list[tuple[int, int]], list[list[int]]]:
    """The pairs every collective-permute of `compiled` sends along (as device ids; they must
    all be the same), and for each of the mesh's n steps the block each device holds: at
    step 0 device i holds its own block i, and each hop moves every block along the pairs."""
    from snippets.hlo import read_collectives

    ids = [d.id for d in mesh.devices.flat]
    found = {
        tuple(sorted((ids[s], ids[r]) for s, r in c.groups))
        for c in read_collectives(compiled)
        if c.kind == "collective-permute"
    }
    if len(found) != 1:
        raise ValueError(
            f"ring_steps needs a program whose permutes all send along one ring; "
            f"it has {len(found)} different sets of pairs."
        )
    pairs = list(found.pop())
    held = [list(ids)]
    for _ in range(1, len(ids)):
        now = dict(zip(ids, held[-1], strict=True))
        moved = dict(now)
        for s, r in pairs:
            moved[r] = now[s]
        held.append([moved[d] for d in ids])
    return pairs, held


def ring_steps(compiled, mesh, title: str) -> object:
    """A ring as a grid: devices across, steps down, each block's path in its colour."""
    pairs, held = ring_holdings(compiled, mesh)
    ids = [d.id for d in mesh.devices.flat]
    n = len(ids)
    pitch = (WIDTH - LEFT - PAD) / n
    x_of = {d: LEFT + (i + 0.5) * pitch for i, d in enumerate(ids)}
    hops = " ".join(f"{s}→{r}" for s, r in pairs)
    top = 3 * LINE + 4
    step_h = LINE
    heading = ["compiled permutes, each hop:", hops]
    parts = [
        f'<text x="{PAD}" y="{LINE - 4 + i * LINE}"{' font-weight="bold"' if not i else ""}>'
        f"{html.escape(line)}</text>"
        for i, line in enumerate(heading)
    ]
    head = "".join(
        f'<tspan x="{x_of[d]:.0f}" fill="{_colour(d)}">{d}</tspan>' for d in ids
    )
    steps = "".join(
        f'<tspan x="{PAD}" y="{top + k * step_h + 4.5:.0f}">step {k}</tspan>'
        for k in range(n)
    )
    parts.append(
        f'<text x="{PAD}" y="{top - 10}">device</text>'
        f'<text y="{top - 10}" text-anchor="middle" font-weight="bold">{head}</text>'
        f"<text>{steps}</text>"
    )
    where = {
        k: {b: d for d, b in zip(ids, row, strict=True)} for k, row in enumerate(held)
    }
    lines = []
    for block in ids:
        d = [f"M{x_of[where[0][block]]:.0f} {top}"]
        for k in range(1, n):
            x0, x1 = x_of[where[k - 1][block]], x_of[where[k][block]]
            y0, y1 = top + (k - 1) * step_h, top + k * step_h
            if (
                abs(x1 - x0) > pitch * 1.5
            ):  # round the end of the ring: leave and come back
                side = pitch / 2 if x1 < x0 else -pitch / 2
                d.append(
                    f"L{x0 + side:.0f} {(y0 + y1) / 2:.0f}M{x1 - side:.0f} {(y0 + y1) / 2:.0f}"
                )
            d.append(f"L{x1:.0f} {y1}")
        lines.append(f'<path stroke="{_colour(block)}" d="{"".join(d)}"/>')
    parts.append(
        '<g fill="none" stroke-width="3" stroke-linecap="round">'
        + "".join(lines)
        + "</g>"
    )
    text = [title, " ".join(heading)] + [
        f"step {k}: devices {_ranges(ids)} hold blocks {' '.join(map(str, row))}"
        for k, row in enumerate(held)
    ]
    height = round(top + (n - 1) * step_h + LINE)
    return _figure("blocks ring", height, ". ".join(text), parts, text)


# ---------------------------------------------------------------------------------------------
# An expert layer's dispatch: how many tokens each device sent to each expert's device.


def dispatch_counts(received) -> tuple[list[int], list[list[int]]]:
    """The devices in mesh order, and counts[e][j]: the slots of `received` (an
    (experts, devices * C, d) array split over its first dimension, as the all-to-all
    leaves it) on the e-th device that hold a token from the j-th device."""
    import numpy as np

    devices = [d.id for d in received.sharding.mesh.devices.flat]
    by_device = {s.device.id: np.asarray(s.data) for s in received.addressable_shards}
    counts = []
    for d in devices:
        slots = by_device[d].any(axis=-1)  # (its experts, devices * C): a token or not
        per_sender = slots.reshape(slots.shape[0], len(devices), -1).sum(axis=(0, 2))
        counts.append([int(c) for c in per_sender])
    return devices, counts


def dispatch(received, title: str) -> object:
    """The dispatch as arrows, each as wide as its count: see the module's docstring."""
    devices, counts = dispatch_counts(received)
    pitch = (WIDTH - LEFT - PAD) / len(devices)
    box = round(pitch - 4)
    x_of = {d: round(LEFT + i * pitch) for i, d in enumerate(devices)}
    low_y = TOP_Y + BOX_H + BAND
    sent = [sum(row[j] for row in counts) for j in range(len(devices))]
    heading = f"tokens sent, {sum(sent)} in all: line width = count"
    ids = "".join(
        f'<tspan x="{x + box / 2:.0f}" fill="{_colour(d)}">{d}</tspan>'
        for d, x in x_of.items()
    )
    middle = BOX_H / 2 + 4.5

    def totals(values, y):
        return "".join(
            f'<tspan x="{x + box / 2:.0f}" y="{y + middle:.0f}">{v}</tspan>'
            for x, v in zip(x_of.values(), values, strict=True)
        )

    parts = [
        f'<text x="{PAD}" y="{LINE - 4}" font-weight="bold">{html.escape(heading)}</text>'
        f'<text x="{PAD}" y="{TOP_Y + middle:.0f}">device</text>'
        f'<text x="{PAD}" y="{low_y + middle:.0f}">expert</text>'
        '<g text-anchor="middle" font-weight="bold">'
        f'<text y="{TOP_Y - 6}">{ids}</text>'
        f'<text y="{low_y + BOX_H + LINE - 2}">{ids}</text></g>'
        '<g fill-opacity="0.35" stroke="currentColor">'
        + "".join(
            f'<rect x="{x}" y="{TOP_Y}" width="{box}" height="{BOX_H}" fill="{_colour(d)}"/>'
            for d, x in x_of.items()
        )
        + "</g>"
        + '<path fill="none" stroke="currentColor" d="'
        + "".join(f"M{x} {low_y}h{box}v{BOX_H}h-{box}z" for x in x_of.values())
        + '"/>'
        + f'<text text-anchor="middle">{totals(sent, TOP_Y)}'
        + f"{totals([sum(row) for row in counts], low_y)}</text>"
    ]
    lines, text = [], [title, heading]
    n = len(devices)
    for j, source in enumerate(devices):
        to = []
        for e, expert in enumerate(devices):
            count = counts[e][j]
            if count:
                # leaves from row e of the sender's buffer, lands in slots j of expert e's
                d = _arrow(
                    x_of[source] + (e + 0.5) / n * box,
                    TOP_Y + BOX_H,
                    x_of[expert] + (j + 0.5) / n * box,
                    low_y - 1,
                )
                tip = f"device {source} to expert {e}: {count}"
                lines.append(
                    f'<path stroke="{_colour(source)}" stroke-width="{0.6 * count:g}" '
                    f'd="{d}"><title>{tip}</title></path>'
                )
            to.append(f"{count} to expert {e}")
        text.append(f"device {source} sends " + ", ".join(to))
    parts.append('<g fill="none">' + "".join(lines) + "</g>")
    height = low_y + BOX_H + LINE + 4
    return _figure("blocks dispatch", height, ". ".join(text), parts, text)


# ---------------------------------------------------------------------------------------------
# A mesh: its devices at their places in the grid.


def mesh_grid(mesh, title: str) -> object:
    """A 1-D or 2-D mesh as its grid of devices: the first axis down, the second across (a
    1-D mesh is one row), each cell the id of the device at that place, in its colour, read
    from `mesh.device_ids`."""
    import numpy as np

    ids = np.asarray(mesh.device_ids)
    names = tuple(mesh.axis_names)
    if ids.ndim > 2:
        raise ValueError(
            f"mesh_grid draws 1-D and 2-D meshes; this one has {ids.ndim} axes {names}: "
            "draw a 2-D mesh, or print mesh.device_ids."
        )
    if ids.ndim == 1:
        ids, down, across = ids[None, :], None, names[0]
    else:
        down, across = names
    rows, cols = ids.shape
    left = PAD + (CHAR_W * (len(down) + 3) if down else 0)
    cell_w = min((WIDTH - PAD - left) / cols, 64)
    cell_h = 34
    axes = f"{across} ({cols}) across" + (f", {down} ({rows}) down" if down else "")
    y = LINE
    parts = [f'<text x="{PAD}" y="{y}" font-weight="bold">{html.escape(axes)}</text>']
    y += LINE + 4
    for c in range(cols):
        parts.append(
            f'<text x="{left + (c + 0.5) * cell_w:.1f}" y="{y}" text-anchor="middle">'
            f"{html.escape(across)} {c}</text>"
        )
    y += 8
    text = [title, "mesh axes: " + axes]
    for r in range(rows):
        top = y + r * cell_h
        if down:
            parts.append(
                f'<text x="{PAD}" y="{top + cell_h / 2:.1f}" dominant-baseline="central">'
                f"{html.escape(down)} {r}</text>"
            )
        row = [int(i) for i in ids[r]]
        for c, i in enumerate(row):
            bx = left + c * cell_w
            place = (f"{down} {r}, " if down else "") + f"{across} {c}"
            parts.append(
                f'<g class="block"><title>device {i} at {html.escape(place)}</title>'
                f'<rect x="{bx:.2f}" y="{top:.2f}" width="{cell_w:.2f}" height="{cell_h}" '
                f'fill="{_colour(i)}" fill-opacity="0.14" stroke="currentColor"/>'
                + _label([i], bx + cell_w / 2, top + cell_h / 2, cell_w)
                + "</g>"
            )
        where = f"{down} {r}: " if down else ""
        text.append(f"  {where}devices " + " ".join(map(str, row)))
    height = math.ceil(y + rows * cell_h + PAD)
    return _figure("blocks mesh-grid", height, ". ".join(text), parts, text)


# ---------------------------------------------------------------------------------------------
# Bytes per device, one stacked bar per row.


def stacked_bars(title: str, rows: list[tuple[str, list[tuple[str, int]]]]) -> object:
    """One bar per row, its parts side by side in their colours, all bars on one scale (the
    largest total fills the width); each bar's total in bytes at its end."""
    if not rows or any(not parts for _, parts in rows):
        raise ValueError("stacked_bars needs rows of (label, [(part, bytes), ...]).")
    names = [name for name, _ in rows[0][1]]
    for label, parts in rows:
        if [name for name, _ in parts] != names:
            raise ValueError(
                f"every row needs the parts {names} in that order; {label!r} has "
                f"{[name for name, _ in parts]}."
            )
        if any(not isinstance(b, int) or b < 0 for _, b in parts):
            raise ValueError(f"{label!r}: a part's bytes must be a whole number >= 0.")
    sums = [sum(b for _, b in parts) for _, parts in rows]
    largest = max(sums)
    if largest == 0:
        raise ValueError("stacked_bars has nothing to draw: every total is 0 bytes.")
    label_w = CHAR_W * max(len(label) for label, _ in rows) + PAD
    totals = [f"{total:,} B" for total in sums]
    total_w = CHAR_W * max(map(len, totals)) + 4
    left, bar_w = PAD + label_w, WIDTH - 2 * PAD - label_w - total_w
    parts_svg, x = [], PAD
    y = LINE
    for k, name in enumerate(names):  # the legend
        parts_svg.append(
            f'<rect x="{x}" y="{y - 10}" width="10" height="10" fill="{_colour(k + 1)}"/>'
            f'<text x="{x + 14}" y="{y}">{html.escape(name)}</text>'
        )
        x += 14 + CHAR_W * len(name) + 12
    y += 10
    text = [title, "bytes per device: " + ", ".join(names)]
    for (label, parts), total in zip(rows, totals, strict=True):
        parts_svg.append(f'<text x="{PAD}" y="{y + 11}">{html.escape(label)}</text>')
        x = left
        for k, (name, count) in enumerate(parts):
            width = count / largest * bar_w
            parts_svg.append(
                f'<rect x="{x:.2f}" y="{y}" width="{width:.2f}" height="16" '
                f'fill="{_colour(k + 1)}" data-bytes="{count}">'
                f"<title>{html.escape(label)}, {html.escape(name)}: {count:,} B</title></rect>"
            )
            x += width
        parts_svg.append(f'<text x="{x + 4:.2f}" y="{y + 12}">{total}</text>')
        text.append(
            f"  {label}: "
            + ", ".join(f"{name} {count:,} B" for name, count in parts)
            + f"; {total}"
        )
        y += 24
    height = math.ceil(y + 4)
    return _figure("blocks bars", height, ". ".join(text), parts_svg, text)


DRAWINGS = {
    "blocks": blocks,
    "stacked_bars": stacked_bars,
    "mesh_grid": mesh_grid,
    "step_flow": step_flow,
    "arrows": arrows,
    "ring_steps": ring_steps,
    "dispatch": dispatch,
}
