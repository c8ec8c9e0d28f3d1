"""Decode against each chip's roofline: FLOPs per byte read, drawn and tabled from one data set.

`<!-- draw: decode_roofline(rows, "title") -->` after a block draws `rows`, the inference
page's `{(attention, batch): decode_traffic(...)}` (snippets/advanced/inference/traffic.py):
one bar per row, its FLOPs per byte read, beside one bar per chip of costmodel.LINKS, the
chip's published bfloat16 peak over its published HBM bandwidth (the FLOPs per byte a
program must do to keep the matrix units busy). Log scale; 13 px text in a drawing 360
units wide, so at least 11 px on a 390 px phone. Text is in currentColor, so it follows the
colour scheme; the bars keep two of the light scheme's device colours in both schemes, as the
pipeline chart's boxes do, so that the white values written on the chips' bars keep their
contrast.

`<!-- draw: decode_bound_table(rows) -->` tables the same data: for each chip, the batch
above which decode would be compute-bound, with the cache and without it.
"""

from __future__ import annotations

import html
import math

from docs_build import costmodel as cm

FONT, WIDTH, LEFT, ROW, TOP = 13, 360, 128, 20, 8
LOW, HIGH = 0.5, 1000.0  # the log axis, FLOPs per byte
TICKS = (1, 10, 100)
DECODE_COLOUR_AT, CHIP_COLOUR_AT = 1, 0  # DEVICE_COLOURS: blue, and red


class RooflineError(ValueError):
    """Rows or chips the figure cannot draw."""


def chips() -> dict[str, dict]:
    """Every chip of costmodel.LINKS that publishes a bfloat16 peak and an HBM bandwidth."""
    found = {}
    for key, c in cm.LINKS.items():
        if c.bf16_flops is None or c.memory_per_second is None:
            continue
        found[key] = {
            "chip": ("TPU " if key.startswith("v") else "") + c.chip,
            "short": f"TPU {key}" if key.startswith("v") else key.upper(),
            "peak": c.bf16_flops,
            "bandwidth": c.memory_per_second,
            "ridge": c.bf16_flops / c.memory_per_second,
            "source": c.source,
            "url": c.url,
        }
    return found


def intensity(step: dict) -> float:
    return step["flops"] / (step["weight bytes"] + step["cache bytes"])


def per_sequence(rows: dict, name: str) -> tuple[float, float, float]:
    """(weight bytes, FLOPs per sequence, cache bytes per sequence) of one attention,
    from two of its rows: the weights are read once per step, the rest per sequence."""
    mine = sorted((b, s) for (n, b), s in rows.items() if n == name)
    if len(mine) < 2:
        raise RooflineError(f"{name!r} needs rows at two batch sizes, not {len(mine)}")
    (b0, s0), (b1, s1) = mine[0], mine[-1]
    if s0["weight bytes"] != s1["weight bytes"]:
        raise RooflineError(f"{name!r}: the weight bytes change with the batch")
    flops = (s1["flops"] - s0["flops"]) / (b1 - b0)
    cache = (s1["cache bytes"] - s0["cache bytes"]) / (b1 - b0)
    return s0["weight bytes"], flops, cache


def compute_bound_batch(
    weight_bytes: float, flops: float, cache: float, ridge: float
) -> int | None:
    """The least batch whose step does `ridge` FLOPs per byte or more: batch * flops >=
    ridge * (weight_bytes + batch * cache). None if no batch does (flops <= ridge * cache:
    the cache alone holds every sequence below the ridge)."""
    if flops <= ridge * cache:
        return None
    return math.ceil(ridge * weight_bytes / (flops - ridge * cache))


def _x(value: float) -> float:
    span = WIDTH - LEFT - 8
    value = min(max(value, LOW), HIGH)
    return LEFT + span * math.log10(value / LOW) / math.log10(HIGH / LOW)


def describe(rows: dict, title: str) -> list[str]:
    lines = [title, "FLOPs per byte read, log scale (bfloat16 weights and cache):"]
    for (name, batch), step in rows.items():
        lines.append(f"decode, {name}, batch {batch}: {intensity(step):.1f}")
    for c in chips().values():
        lines.append(
            f"{c['chip']}: {c['ridge']:.0f} ({c['peak'] / 1e12:g} TFLOP/s bf16 over "
            f"{c['bandwidth'] / 1e9:g} GB/s HBM)"
        )
    return lines


def draw(rows: dict, title: str) -> tuple[str, str]:
    """The bars as inline SVG, and their text for screen readers and the snapshot."""
    from docs_build.render import DEVICE_COLOURS

    if not rows:
        raise RooflineError("decode_roofline needs at least one row")
    bars = [
        (f"{name}, {batch}", intensity(step), "decode")
        for (name, batch), step in rows.items()
    ] + [(c["short"], c["ridge"], "chip") for c in chips().values()]
    parts = []
    bottom = TOP + len(bars) * ROW
    for tick in TICKS:
        x = _x(tick)
        parts.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{bottom}" '
            'stroke="currentColor" stroke-opacity="0.3" stroke-dasharray="2 3"/>'
            f'<text x="{x:.1f}" y="{bottom + FONT + 2}" text-anchor="middle">{tick}</text>'
        )
    for i, (label, value, kind) in enumerate(bars):
        y = TOP + i * ROW
        colour = DEVICE_COLOURS[
            DECODE_COLOUR_AT if kind == "decode" else CHIP_COLOUR_AT
        ]
        end = _x(value)
        what = "decode" if kind == "decode" else "compute-bound above"
        parts.append(
            f'<text x="{LEFT - 6}" y="{y + ROW - 6}" text-anchor="end">'
            f"{html.escape(label)}</text>"
            f'<rect x="{LEFT}" y="{y + 2}" width="{end - LEFT:.1f}" height="{ROW - 4}" '
            f'fill="{colour}"><title>{html.escape(label)}: {what} {value:.1f} FLOPs '
            "per byte</title></rect>"
        )
        if kind == "chip":
            parts.append(
                f'<text x="{end - 4:.1f}" y="{y + ROW - 6}" text-anchor="end" '
                f'fill="#ffffff">{value:.0f}</text>'
            )
        else:
            parts.append(
                f'<text x="{end + 4:.1f}" y="{y + ROW - 6}">{value:.1f}</text>'
            )
    legend = bottom + 2 * FONT + 6
    parts.append(
        f'<text x="{LEFT}" y="{legend}">FLOPs per byte read (log scale)</text>'
    )
    height = legend + 6
    text = describe(rows, title)
    desc = html.escape(" ".join(text[1:]))
    svg = (
        f'<svg class="roofline" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" '
        f'height="{height}" xmlns="http://www.w3.org/2000/svg" role="img" '
        f'aria-label="{html.escape(title)}. {desc}" font-size="{FONT}" '
        'font-family="system-ui, -apple-system, Segoe UI, Roboto, sans-serif" '
        'fill="currentColor">' + "".join(parts) + "</svg>"
    )
    return svg, "\n".join(text)


def bound_rows(rows: dict) -> list[dict]:
    """For each chip and attention: the batch above which decode is compute-bound, with
    the cache (None: never) and were the cache free (the weights alone)."""
    names = list(dict.fromkeys(n for n, _ in rows))
    out = []
    for c in chips().values():
        for name in names:
            weights, flops, cache = per_sequence(rows, name)
            out.append(
                {
                    "chip": c["chip"],
                    "ridge": c["ridge"],
                    "attention": name,
                    "limit": flops / cache,
                    "with cache": compute_bound_batch(
                        weights, flops, cache, c["ridge"]
                    ),
                    "weights only": compute_bound_batch(weights, flops, 0, c["ridge"]),
                }
            )
    return out


def table(rows: dict) -> tuple[str, str]:
    """The compute-bound batches as an HTML table, and the same as text."""
    from docs_build.render import CARD_INK, CARD_PAPER

    head = (
        "chip",
        "FLOP/B to be compute-bound",
        "attention",
        "decode's FLOP/B at any batch, at most",
        "compute-bound from batch: with the cache",
        "were the cache free",
    )
    body, text = [], [" | ".join(head)]
    for r in bound_rows(rows):
        cells = (
            r["chip"],
            f"{r['ridge']:.0f}",
            r["attention"],
            f"{r['limit']:.1f}",
            "never" if r["with cache"] is None else f"{r['with cache']:,}",
            f"{r['weights only']:,}",
        )
        text.append(" | ".join(cells))
        body.append(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>"
        )
    sources = "; ".join(
        f'<a href="{c["url"]}">{html.escape(c["source"])}</a>' for c in chips().values()
    )
    caption = (
        "One decode step of this page's layer in bfloat16, MAX_LEN slots scored per "
        f"sequence, against each chip's published peak and HBM bandwidth ({sources})"
    )
    table_html = (
        f'<table class="roofline" style="color:{CARD_INK};background:{CARD_PAPER}">'
        f'<caption style="color:{CARD_INK};background:{CARD_PAPER}">{caption}</caption>'
        "<thead><tr>"
        + "".join(f'<th scope="col">{html.escape(h)}</th>' for h in head)
        + "</tr></thead><tbody>"
        + "".join(body)
        + "</tbody></table>"
    )
    return table_html, "\n".join(text)
