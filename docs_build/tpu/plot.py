"""The scaling plot: each strategy's bytes per device from 8 to 256 chips, formula and compiled.

`<!-- tpu-plot -->` on a page becomes an inline SVG drawn from docs_build/tpu/results.json
and the cost model (docs_build.costmodel), and a list of the points where the compiler
changed its plan between two slice sizes. Two panels, both on log scales: the bytes one
device sends per step (ring model), and the state it keeps between steps. Solid lines with
markers are the compiled programs; dashed lines of the same colour the formula under the plan
the training pages teach. A numbered ring marks each point where the plan changed.

The drawing is plain SVG: text in `currentColor`, so it follows the page's colour scheme, and
colours chosen to keep 3:1 against both the light and the dark background (tested). Every
point carries its value in `data-mib`, which the tests compare with the results.
"""

from __future__ import annotations

import html
import itertools
import math

from docs_build import costmodel as cm
from docs_build.tpu import pages

PLOT = "<!-- tpu-plot -->"
# One chip (v5e), three slice sizes: the 2-D, 64- and 256-chip topologies compiled.
TARGETS = ("v5e:2x4", "v5e:8x8", "v5e:16x16")
COLOURS = {
    "data parallel": "#3d7fd6",
    "FSDP": "#d55e00",
    "tensor parallel": "#009e73",
    "2-D": "#8e6bd1",
    "pipeline": "#b8860b",
}
PANELS = (
    ("wire", "Sent per device per step"),
    ("state", "State per device"),
)
WIDTH, HEIGHT = 760, 330
PANEL_W, PANEL_H, TOP, LEFT, GAP = 300, 200, 34, 62, 80


def _formula(field: str, strategy: str, p: dict, model: cm.MLP) -> float:
    if field == "wire":
        return cm.wire_bytes(strategy, p["mesh"], model) / pages.MIB
    return cm.state_bytes(strategy, p["mesh"], model) / pages.MIB


def series(data: dict | None = None) -> dict[tuple[str, str], list[dict]]:
    """(field, strategy) -> one point per target: chips, compiled, formula, plan."""
    data = data or pages.results()
    m = data["model"]
    model = cm.MLP(m["d"], m["hidden"], m["batch"], m["pipeline_microbatches"])
    out = {}
    for field, _ in PANELS:
        for strategy in pages.STRATEGIES:
            if field == "state" and strategy == "pipeline":
                continue  # a forward pass, no optimizer: not the state of a training step
            points = []
            for target in TARGETS:
                p = pages.program(target, strategy, data)
                plan = cm.plan_of(p)
                points.append(
                    {
                        "target": target,
                        "chips": data["targets"][target]["devices"],
                        "compiled": pages.mib(p, field),
                        "formula": _formula(field, strategy, p, model),
                        "plan": plan.describe(strategy),
                    }
                )
            out[field, strategy] = points
    return out


def plan_changes(data: dict | None = None) -> list[dict]:
    """Where a strategy's plan differs from its plan on the next smaller slice."""
    changes = []
    for (field, strategy), points in series(data).items():
        if field != "wire":
            continue
        for before, after in itertools.pairwise(points):
            if before["plan"] != after["plan"]:
                changes.append(
                    {
                        "strategy": strategy,
                        "from": before,
                        "to": after,
                    }
                )
    return changes


def _scale(lo: float, hi: float) -> tuple[int, int]:
    return math.floor(math.log10(lo)), math.ceil(math.log10(hi))


def _marker(
    shape: int, x: float, y: float, colour: str, value: float | None = None
) -> str:
    """A series' marker; `value`, where given, is the point's MiB (tests read it)."""
    a = 4.5
    data = (
        f'fill="{colour}"'
        if value is None
        else f'data-mib="{value:.4f}" fill="{colour}"'
    )
    if shape == 0:
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{a}" {data}/>'
    if shape == 1:
        return f'<rect x="{x - a:.1f}" y="{y - a:.1f}" width="{2 * a}" height="{2 * a}" {data}/>'
    if shape == 2:
        pts = f"{x:.1f},{y - a - 1:.1f} {x - a - 1:.1f},{y + a:.1f} {x + a + 1:.1f},{y + a:.1f}"
    elif shape == 3:
        pts = f"{x:.1f},{y - a - 1:.1f} {x + a + 1:.1f},{y:.1f} {x:.1f},{y + a + 1:.1f} {x - a - 1:.1f},{y:.1f}"
    else:
        pts = f"{x:.1f},{y + a + 1:.1f} {x - a - 1:.1f},{y - a:.1f} {x + a + 1:.1f},{y - a:.1f}"
    return f'<polygon points="{pts}" {data}/>'


def svg(data: dict | None = None) -> str:
    data = data or pages.results()
    all_series = series(data)
    changes = plan_changes(data)
    parts = []
    for index, (field, title) in enumerate(PANELS):
        x0 = LEFT + index * (PANEL_W + GAP)
        values = [
            v
            for (f, _), pts in all_series.items()
            if f == field
            for p in pts
            for v in (p["compiled"], p["formula"])
        ]
        lo, hi = _scale(min(values), max(values))

        def y_of(v, lo=lo, hi=hi):
            return TOP + PANEL_H * (1 - (math.log10(v) - lo) / (hi - lo))

        def x_of(chips, x0=x0):
            return x0 + 24 + (PANEL_W - 48) * (math.log2(chips) - 3) / (8 - 3)

        parts.append(
            f'<text x="{x0}" y="{TOP - 14}" font-weight="bold">{title} (MiB)</text>'
        )
        parts.append(
            f'<rect x="{x0}" y="{TOP}" width="{PANEL_W}" height="{PANEL_H}" '
            'fill="none" stroke="currentColor" stroke-opacity="0.5"/>'
        )
        for e in range(lo, hi + 1):
            y = y_of(10**e)
            label = f"{10**e:g}"
            parts.append(
                f'<line x1="{x0}" x2="{x0 + PANEL_W}" y1="{y:.1f}" y2="{y:.1f}" '
                'stroke="currentColor" stroke-opacity="0.15"/>'
                f'<text x="{x0 - 6}" y="{y + 4:.1f}" text-anchor="end">{label}</text>'
            )
        for target in TARGETS:
            chips = data["targets"][target]["devices"]
            x = x_of(chips)
            parts.append(
                f'<text x="{x:.1f}" y="{TOP + PANEL_H + 16}" text-anchor="middle">'
                f"{chips}</text>"
            )
        parts.append(
            f'<text x="{x0 + PANEL_W / 2}" y="{TOP + PANEL_H + 32}" '
            'text-anchor="middle">chips (v5e)</text>'
        )
        for shape, strategy in enumerate(pages.STRATEGIES):
            points = all_series.get((field, strategy))
            if not points:
                continue
            colour = COLOURS[strategy]
            formula = " ".join(
                f"{x_of(p['chips']):.1f},{y_of(p['formula']):.1f}" for p in points
            )
            compiled = " ".join(
                f"{x_of(p['chips']):.1f},{y_of(p['compiled']):.1f}" for p in points
            )
            parts.append(
                f'<g class="series" data-field="{field}" '
                f'data-strategy="{html.escape(strategy)}">'
                f'<polyline points="{formula}" fill="none" stroke="{colour}" '
                'stroke-width="1.5" stroke-dasharray="5 4"/>'
                f'<polyline points="{compiled}" fill="none" stroke="{colour}" '
                'stroke-width="2"/>'
                + "".join(
                    _marker(
                        shape,
                        x_of(p["chips"]),
                        y_of(p["compiled"]),
                        colour,
                        p["compiled"],
                    )
                    for p in points
                )
                + "</g>"
            )
        if field == "wire":
            for number, change in enumerate(changes, 1):
                p = change["to"]
                x, y = x_of(p["chips"]), y_of(p["compiled"])
                parts.append(
                    f'<g class="plan-change" data-number="{number}">'
                    f'<circle cx="{x:.1f}" cy="{y:.1f}" r="9" fill="none" '
                    'stroke="currentColor" stroke-width="1.5"/>'
                    f'<text x="{x + 11:.1f}" y="{y - 8:.1f}" font-weight="bold">'
                    f"{number}</text></g>"
                )
    # legend, under both panels
    legend_y = TOP + PANEL_H + 58
    x = LEFT
    for shape, strategy in enumerate(pages.STRATEGIES):
        colour = COLOURS[strategy]
        parts.append(
            f'<line x1="{x}" x2="{x + 26}" y1="{legend_y}" y2="{legend_y}" '
            f'stroke="{colour}" stroke-width="2"/>'
            + _marker(shape, x + 13, legend_y, colour)
            + f'<text x="{x + 32}" y="{legend_y + 4}">{html.escape(strategy)}</text>'
        )
        x += 132
    parts.append(
        f'<text x="{LEFT}" y="{legend_y + 24}">solid: compiled by libtpu; dashed: the '
        "formula under the plan the training pages teach; ring: the plan changed "
        "from the smaller slice</text>"
    )
    title = "Bytes per device against the number of v5e chips, per strategy"
    desc = (
        "Two log-scale panels, sent per device per step and state per device, at 8, 64 "
        "and 256 chips, compiled beside the formula; the tables on this page hold every value."
    )
    return (
        f'<svg class="tpu-plot-svg" viewBox="0 0 {WIDTH} {HEIGHT + 10}" '
        'xmlns="http://www.w3.org/2000/svg" role="img" aria-labelledby="tpu-plot-title '
        'tpu-plot-desc" font-size="12">'
        f'<title id="tpu-plot-title">{title}</title><desc id="tpu-plot-desc">{desc}</desc>'
        + "".join(parts)
        + "</svg>"
    )


def figure(data: dict | None = None) -> str:
    """The plot, and the list of plan changes its rings mark, as page Markdown."""
    data = data or pages.results()
    items = []
    for number, change in enumerate(plan_changes(data), 1):
        a, b = change["from"], change["to"]
        items.append(
            f"{number}. **{change['strategy']}, {a['chips']} \u2192 {b['chips']} chips:** "
            f"{a['plan']} became {b['plan']}."
        )
    v = data["versions"]
    caption = (
        "The MLP of the tables below, compiled for three v5e slices by JAX "
        f"{v['jax']} with libtpu {v['libtpu']}; nothing ran on a TPU. The pipeline is "
        "left out of the state panel: its step is a forward pass without an optimizer."
    )
    return (
        '<figure class="tpu-plot" data-search-exclude>\n'
        f"{svg(data)}\n"
        f"<figcaption>{caption}</figcaption>\n</figure>\n\n"
        "Where the compiler changed its plan as the slice grew:\n\n"
        + "\n".join(items)
        + "\n"
    )
