"""The scaling plot: each strategy's bytes per device from 8 to 256 chips, formula and compiled.

`<!-- tpu-plot -->` on a page becomes an inline SVG drawn from docs_build/compiled/results/
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
import re
from dataclasses import dataclass

from docs_build import costmodel as cm
from docs_build.compiled import results as pages

PLOT = "<!-- tpu-plot -->"
PLOTS = re.compile(r"<!-- tpu-plot(?:: (tpu|gpu))? -->")


@dataclass(frozen=True)
class Scale:
    """One family's plot: a chip at three sizes."""

    targets: tuple[str, ...]
    unit: str  # the x axis
    devices: str  # "chips", "GPUs"
    compiler: str  # what compiled the solid lines
    grows: str  # what grows: "slice", "cluster"


SCALES = {
    # One chip (v5e), three slice sizes: the 2-D, 64- and 256-chip topologies compiled.
    "tpu": Scale(
        ("v5e:2x4", "v5e:8x8", "v5e:16x16"), "chips (v5e)", "chips", "libtpu", "slice"
    ),
    # One card (H100 SXM), one node of 8 and clusters of 2 and 8 such nodes.
    "gpu": Scale(
        ("h100:1x8", "h100:2x8", "h100:8x8"),
        "GPUs (H100, 8 per node)",
        "GPUs",
        "the CUDA plugin",
        "cluster",
    ),
}
TARGETS = SCALES["tpu"].targets
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
WIDTH, HEIGHT = 760, 346
PANEL_W, PANEL_H, TOP, LEFT, GAP = 300, 200, 34, 62, 80


def _formula(field: str, strategy: str, p: dict, model: cm.MLP) -> float:
    if field == "wire":
        return cm.wire_bytes(strategy, p["mesh"], model) / pages.MIB
    return cm.state_bytes(strategy, p["mesh"], model) / pages.MIB


def series(
    data: dict | None = None, family: str = "tpu"
) -> dict[tuple[str, str], list[dict]]:
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
            for target in SCALES[family].targets:
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


def plan_changes(data: dict | None = None, family: str = "tpu") -> list[dict]:
    """Where a strategy's plan differs from its plan on the next smaller slice."""
    changes = []
    for (field, strategy), points in series(data, family).items():
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


def svg(data: dict | None = None, family: str = "tpu") -> str:
    data = data or pages.results()
    scale = SCALES[family]
    all_series = series(data, family)
    changes = plan_changes(data, family)
    sizes = [data["targets"][t]["devices"] for t in scale.targets]
    low, high = math.log2(min(sizes)), math.log2(max(sizes))
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
            return x0 + 24 + (PANEL_W - 48) * (math.log2(chips) - low) / (high - low)

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
        for target in scale.targets:
            chips = data["targets"][target]["devices"]
            x = x_of(chips)
            parts.append(
                f'<text x="{x:.1f}" y="{TOP + PANEL_H + 16}" text-anchor="middle">'
                f"{chips}</text>"
            )
        parts.append(
            f'<text x="{x0 + PANEL_W / 2}" y="{TOP + PANEL_H + 32}" '
            f'text-anchor="middle">{scale.unit}</text>'
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
        f'<text x="{LEFT}" y="{legend_y + 24}">solid: compiled by {scale.compiler}; '
        "dashed: the formula under the plan the training pages teach;</text>"
        f'<text x="{LEFT}" y="{legend_y + 40}">ring: the plan changed from the smaller '
        f"{scale.grows}</text>"
    )
    title = f"Bytes per device against the number of {scale.unit}, per strategy"
    counts = ", ".join(str(n) for n in sizes[:-1]) + f" and {sizes[-1]}"
    desc = (
        "Two log-scale panels, sent per device per step and state per device, at "
        f"{counts} {scale.devices}, compiled beside the formula; the tables on this page "
        "hold every value."
    )
    ids = f"{family}-plot-title {family}-plot-desc"
    return (
        f'<svg class="tpu-plot-svg" viewBox="0 0 {WIDTH} {HEIGHT + 10}" '
        f'xmlns="http://www.w3.org/2000/svg" role="img" aria-labelledby="{ids}" '
        'font-size="12">'
        f'<title id="{family}-plot-title">{title}</title>'
        f'<desc id="{family}-plot-desc">{desc}</desc>' + "".join(parts) + "</svg>"
    )


def figure(data: dict | None = None, family: str = "tpu") -> str:
    """The plot, and the list of plan changes its rings mark, as page Markdown."""
    data = data or pages.results()
    scale = SCALES[family]
    items = []
    for number, change in enumerate(plan_changes(data, family), 1):
        a, b = change["from"], change["to"]
        items.append(
            f"{number}. **{change['strategy']}, {a['chips']} \u2192 {b['chips']} "
            f"{scale.devices}:** {a['plan']} became {b['plan']}."
        )
    from docs_build.compiled.pages import measured  # pages fills this module's marker

    v = data["versions"][family]
    if family == "tpu":
        made = "compiled ahead of time for three v5e slices; nothing ran on a TPU"
        how = f"Compiled by JAX {v['jax']} with libtpu {v['libtpu']}."
    else:
        made = (
            "compiled ahead of time for one node of 8 H100s and clusters of 2 and 8 such "
            "nodes; nothing ran on a GPU"
        )
        how = f"Compiled by JAX {v['jax']} with jax-cuda12-plugin {v['jax-cuda12-plugin']}."
    caption = (
        f"The MLP of the tables below, {made}. The pipeline is left out of the state "
        "panel: its step is a forward pass without an optimizer."
    )
    changed = (
        f"Where the compiler changed its plan as the {scale.grows} grew:\n\n"
        + "\n".join(items)
        if items
        else f"The compiler kept every strategy's plan as the {scale.grows} grew."
    )
    return (
        '<figure class="tpu-plot" data-search-exclude>\n'
        f"{svg(data, family)}\n"
        f"<figcaption>{caption}</figcaption>\n</figure>\n\n"
        + measured(how)
        + "\n"
        + changed
        + "\n"
    )
