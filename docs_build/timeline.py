"""A timeline of one step of a sharded program, drawn from its profiler trace.

`<!-- draw: timeline(spans, "title") -->` after a block draws the block's `spans`: one lane per
device, one box per HLO instruction the device ran, placed at its start and as wide as its
duration. Compute is one colour, collectives another; the time a collective spent waiting for
the other devices (the trace's `Rendezvous` events) is a strip along the bottom of its box.
Each span is a `(device, op, start, duration, kind)` tuple, times in µs, `kind` one of
`KINDS`; snippets/advanced/profiling/trace.py reads them out of a trace.

Plain SVG, as docs_build/compiled/plot.py draws: text in `currentColor`, so it follows the page's
colour scheme, fills that keep 3:1 against the light and the dark background, labels inside a
box in the colour that reads on it, a `<title>` and `<desc>` for screen readers. The text
returned with it (the alt text, which the golden snapshot compares) names the lanes and the
ops in the order each device ran them, and no time: times differ from run to run.
"""

from __future__ import annotations

import hashlib
import html
import math
from collections.abc import Iterable

# Okabe-Ito colours (told apart with any colour vision), each at least 3:1 on both backgrounds.
KINDS = {
    "compute": ("#0072b2", "compute"),
    "collective": ("#d55e00", "collective"),
    "waiting": ("#cc79a7", "waiting for the other devices (Rendezvous)"),
}
# Labels inside a box: the ink with 4.5:1 on it. Set by class, so that the fills of the
# drawing are its boxes' colours only, whichever labels fit this time.
LABEL_INK = {"compute": "#ffffff", "collective": "#000000"}
LEFT, PLOT_W, RIGHT, TOP = 70, 600, 20, 6
LANE, GAP, STRIP = 22, 5, 7
CHAR_W = 6.2  # an 11 px sans-serif character, wide enough for a label to fit its box


def _check(spans: list[tuple]) -> None:
    if not spans:
        raise ValueError("timeline needs at least one span to draw.")
    for span in spans:
        if len(span) != 5:
            raise ValueError(
                f"a span is (device, op, start, duration, kind); got {span!r}"
            )
        _, _, start, duration, kind = span
        if kind not in KINDS:
            raise ValueError(f"span kind {kind!r} is not one of {sorted(KINDS)}")
        if start < 0 or duration < 0:
            raise ValueError(f"span {span!r} starts or lasts less than 0 µs")


def _tick_step(end: float) -> float:
    """A round step (1, 2 or 5 times a power of ten) giving at most 6 intervals."""
    power = 10 ** math.floor(math.log10(end / 6)) if end > 0 else 1
    return next(m * power for m in (1, 2, 5, 10) if end / (m * power) <= 6)


def _ranges(devices: list[int]) -> str:
    """`0-7`, or `0, 2, 5` when the devices are not consecutive."""
    if len(devices) > 2 and devices == list(range(devices[0], devices[-1] + 1)):
        return f"{devices[0]}-{devices[-1]}"
    return ", ".join(map(str, devices))


def describe(spans: Iterable[tuple], title: str) -> str:
    """The lanes and each device's ops in order, devices with the same ops together."""
    spans = sorted(spans, key=lambda s: (s[0], s[2]))
    devices = sorted({s[0] for s in spans})
    ran: dict[tuple[str, ...], list[int]] = {}
    for device in devices:
        ops = tuple(s[1] for s in spans if s[0] == device and s[4] != "waiting")
        ran.setdefault(ops, []).append(device)
    lines = [title, f"one lane per device ({len(devices)}), time in µs across"]
    for ops, group in ran.items():
        lines.append(f"devices {_ranges(group)} ran, in order: {', '.join(ops)}")
    return "\n".join(lines)


def draw(spans: Iterable[tuple], title: str) -> tuple[str, str]:
    """The step as inline SVG, and its text for screen readers and the snapshot."""
    spans = list(spans)
    _check(spans)
    devices = sorted({s[0] for s in spans})
    end = max(s[2] + s[3] for s in spans)
    scale = PLOT_W / end if end > 0 else 0.0
    lane_y = {d: TOP + i * (LANE + GAP) for i, d in enumerate(devices)}
    bottom = TOP + len(devices) * (LANE + GAP)
    parts = []
    step = _tick_step(end)
    for i in range(int(end // step) + 1):
        x = LEFT + i * step * scale
        parts.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{bottom}" '
            'stroke="currentColor" stroke-opacity="0.2"/>'
            f'<text x="{x:.1f}" y="{bottom + 12}" text-anchor="middle">{i * step:g}</text>'
        )
    parts.append(
        f'<text x="{LEFT + PLOT_W / 2}" y="{bottom + 27}" text-anchor="middle">'
        "µs after the step's first op</text>"
    )
    for device, y in lane_y.items():
        parts.append(
            f'<text x="{LEFT - 8}" y="{y + LANE / 2 + 4}" text-anchor="end">'
            f"device {device}</text>"
        )
    # Boxes first, then the waiting strips over them.
    for device, op, start, duration, kind in sorted(
        spans, key=lambda s: s[4] == "waiting"
    ):
        x, width = LEFT + start * scale, max(duration * scale, 1.0)
        y, height = lane_y[device], LANE
        if kind == "waiting":
            y, height = y + LANE - STRIP, STRIP
        tip = html.escape(f"device {device}: {op}, {duration:.1f} µs, {kind}")
        parts.append(
            f'<rect x="{x:.1f}" y="{y}" width="{width:.1f}" height="{height}" '
            f'fill="{KINDS[kind][0]}"><title>{tip}</title></rect>'
        )
        if kind != "waiting" and width >= CHAR_W * len(op) + 6:
            parts.append(
                f'<text x="{x + 3:.1f}" y="{y + 12}" class="{kind}">'
                f"{html.escape(op)}</text>"
            )
    legend_y = bottom + 44
    x = LEFT
    for colour, name in KINDS.values():
        parts.append(
            f'<rect x="{x}" y="{legend_y - 9}" width="12" height="12" fill="{colour}"/>'
            f'<text x="{x + 17}" y="{legend_y + 1}">{html.escape(name)}</text>'
        )
        x += 17 + CHAR_W * len(name) + 22
    width, height = LEFT + PLOT_W + RIGHT, legend_y + 10
    text = describe(spans, title)
    ident = "tl-" + hashlib.sha1(title.encode()).hexdigest()[:8]
    desc = " ".join(text.splitlines()[1:])
    inks = "".join(f"#{ident} .{k}{{fill:{ink}}}" for k, ink in LABEL_INK.items())
    svg = (
        f'<svg id="{ident}" class="timeline" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" xmlns="http://www.w3.org/2000/svg" role="img" '
        f'aria-labelledby="{ident}-title {ident}-desc" font-size="11" '
        'font-family="system-ui, -apple-system, Segoe UI, Roboto, sans-serif" '
        'fill="currentColor">'
        f'<title id="{ident}-title">{html.escape(title)}</title>'
        f'<desc id="{ident}-desc">{html.escape(desc)}</desc>'
        f"<style>{inks}</style>" + "".join(parts) + "</svg>"
    )
    return svg, text
