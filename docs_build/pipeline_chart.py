"""A pipeline schedule's bubble chart, drawn from the table a page's code runs.

`<!-- draw: pipeline_chart(table, num_stages, "title") -->` after a block draws `table`, a
`{(step, stage): ("F" or "B", microbatch)}` dict as snippets/training/pipeline_training builds
and runs it (or the `ran` array a GPipe forward pass records, see `from_ran`): one lane per
stage (device), one column per step, a box per job. A job may carry a third number, the chunk
of an interleaved schedule, `("F", 3, 1)`: its box reads F3c1 and the lanes are devices.
Forward boxes
are filled with the device's colour (the collectives page's colours) and labelled in white;
backward boxes are white cards outlined and labelled in that colour, so both read in the light
and the dark scheme (every device colour keeps 4.5:1 on white). An empty slot is the bubble.

The SVG keeps its size (11 px text) and scrolls sideways on a narrow screen instead of
shrinking. The text returned with it lists each stage's jobs in order, with its idle steps.
"""

from __future__ import annotations

import hashlib
import html

from docs_build.render import CARD_PAPER, DEVICE_COLOURS

LEFT, CELL, LANE, GAP, TOP = 58, 26, 22, 4, 16


def _check(table: dict, num_stages: int) -> int:
    if not table:
        raise ValueError("pipeline_chart needs a schedule with at least one job.")
    for (step, stage), job in table.items():
        if not 0 <= stage < num_stages or step < 0:
            raise ValueError(
                f"step {step}, stage {stage} is outside a chart of {num_stages} stages."
            )
        if len(job) not in (2, 3) or job[0] not in ("F", "B"):
            raise ValueError(
                f"a job is ('F' or 'B', microbatch[, chunk]); got {job!r}."
            )
    return max(step for step, _ in table) + 1


def from_ran(ran) -> dict:
    """The table of a forward pass as a GPipe loop records it: `ran`, one row per stage and
    one column per step, holds the microbatch each stage ran at each step, or -1 for none
    (snippets/training/pipeline/gpipe.py)."""
    import numpy as np

    grid = np.asarray(ran)
    if grid.ndim != 2 or not np.issubdtype(grid.dtype, np.integer):
        raise ValueError(
            "pipeline_chart takes a schedule table, or `ran`: an integer array of one row "
            f"per stage and one column per step; got {grid.dtype} of shape {grid.shape}."
        )
    return {
        (int(step), int(stage)): ("F", int(grid[stage, step]))
        for stage, step in zip(*np.nonzero(grid >= 0), strict=True)
    }


def _label(job: tuple) -> str:
    """F3, or F3c1 for microbatch 3 through chunk 1."""
    return f"{job[0]}{job[1]}" + (f"c{job[2]}" if len(job) == 3 else "")


def _lane(table: dict) -> str:
    return "device" if any(len(job) == 3 for job in table.values()) else "stage"


def describe(table: dict, num_stages: int, title: str) -> str:
    """Each stage's jobs in step order, a run of idle steps as `idle N`."""
    steps = _check(table, num_stages)
    idle = steps * num_stages - len(table)
    lines = [
        title,
        f"{num_stages} {_lane(table)}s across, {steps} steps; {idle} of "
        f"{steps * num_stages} slots idle",
    ]
    for stage in range(num_stages):
        words, gap = [], 0
        for step in range(steps):
            job = table.get((step, stage))
            if job is None:
                gap += 1
                continue
            if gap:
                words.append(f"(idle {gap})")
                gap = 0
            words.append(_label(job))
        if gap:
            words.append(f"(idle {gap})")
        lines.append(f"{_lane(table)} {stage}: " + " ".join(words))
    return "\n".join(lines)


def draw(table: dict, num_stages: int, title: str) -> tuple[str, str]:
    """The chart as inline SVG, and its text for screen readers and the snapshot."""
    steps = _check(table, num_stages)
    lane = _lane(table)
    cell = CELL if lane == "stage" else CELL + 8  # room for F3c1
    bottom = TOP + num_stages * (LANE + GAP)
    parts = []
    for step in range(0, steps, 2):
        x = LEFT + step * cell + cell / 2
        parts.append(f'<text x="{x}" y="{TOP - 5}" text-anchor="middle">{step}</text>')
    for stage in range(num_stages):
        y = TOP + stage * (LANE + GAP)
        parts.append(
            f'<text x="{LEFT - 6}" y="{y + LANE / 2 + 4}" text-anchor="end">'
            f"{lane} {stage}</text>"
            f'<line x1="{LEFT}" x2="{LEFT + steps * cell}" y1="{y + LANE / 2}" '
            f'y2="{y + LANE / 2}" stroke="currentColor" stroke-opacity="0.25" '
            'stroke-dasharray="2 3"/>'
        )
    # Boxes and labels grouped by stage and pass, so that their colours are written once
    # per group rather than once per box (a chunk chart has v times the boxes).
    rects: dict[tuple, list[str]] = {}
    labels: dict[tuple, list[str]] = {}
    for (step, stage), job in sorted(table.items()):
        op, m = job[:2]
        x, y = LEFT + step * cell + 1, TOP + stage * (LANE + GAP)
        name = "forward" if op == "F" else "backward"
        # A chunk chart's tooltips are left out, to keep the page light; the text (the
        # SVG's <desc>) still lists every job.
        tip = (
            f"<title>step {step}, stage {stage}: {name} of microbatch {m}</title>"
            if lane == "stage"
            else ""
        )
        box = f'<rect x="{x}" y="{y}" width="{cell - 2}" height="{LANE}" rx="2"'
        rects.setdefault((stage, op), []).append(
            f"{box}>{tip}</rect>" if tip else f"{box}/>"
        )
        labels.setdefault((stage, op), []).append(
            f'<text x="{x + (cell - 2) / 2:g}" y="{y + LANE / 2 + 4:g}">'
            f"{_label(job)}</text>"
        )
    boxes = []
    for stage, op in sorted(rects):
        colour = DEVICE_COLOURS[stage % len(DEVICE_COLOURS)]
        fill, ink = (colour, "#ffffff") if op == "F" else (CARD_PAPER, colour)
        boxes.append(
            f'<g fill="{fill}" stroke="{colour}">{"".join(rects[stage, op])}</g>'
            f'<g fill="{ink}">{"".join(labels[stage, op])}</g>'
        )
    # the boxes' shared attributes, once
    parts.append(f'<g stroke-width="2" text-anchor="middle">{"".join(boxes)}</g>')
    legend_y = bottom + 14
    parts.append(
        f'<text x="{LEFT}" y="{legend_y}">step across; F: forward (filled), '
        + (
            "B: backward (outlined), "
            if any(job[0] == "B" for job in table.values())
            else ""
        )
        + "empty: idle"
        + ("; F3c1: microbatch 3 through chunk 1" if lane == "device" else "")
        + "</text>"
    )
    width, height = LEFT + steps * cell + 8, legend_y + 6
    text = describe(table, num_stages, title)
    ident = "pc-" + hashlib.sha1(text.encode()).hexdigest()[:8]
    desc = " ".join(text.splitlines()[1:])
    svg = (
        f'<svg id="{ident}" class="pipeline-chart" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg" role="img" '
        f'aria-labelledby="{ident}-title {ident}-desc" font-size="11" '
        'font-family="system-ui, -apple-system, Segoe UI, Roboto, sans-serif" '
        'fill="currentColor">'
        f'<title id="{ident}-title">{html.escape(title)}</title>'
        f'<desc id="{ident}-desc">{html.escape(desc)}</desc>'
        + "".join(parts)
        + "</svg>"
    )
    return svg, text
