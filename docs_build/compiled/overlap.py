"""The overlap page's evidence: compiled schedules drawn, and when a gather can hide.

- `<!-- overlap-chart: TARGET / PROGRAM -->`: a program's collectives and matmuls in the order
  its compiled program runs them (`schedule` in docs_build/compiled/results/, or the body
  of its one loop where only that holds collectives: `loops`, see `drawn`), drawn as two
  lanes: each collective as a bar from its start to its done (a synchronous one as one
  step), and each run of matmuls as a box. What lies under a bar runs while that collective
  is in flight. The x axis is program order, not time. A list below the drawing says the
  same in words (its text alternative).
- `<!-- overlap-hide -->`: for the FSDP step at the compiled sizes, each layer's weight
  gather against the forward matmul before it: bytes / link bandwidth against FLOPs / peak,
  from the published figures in docs_build/costmodel.py LINKS. A lower-bound model, not a
  measurement. `<!-- overlap-hide-said -->`: the same rows, one sentence for another page
  (the choosing page): the rows per device each chip needs before its gather can hide.

Filled in by docs_build/compiled/pages.py `fill`, from the committed results, so a recompile
redraws them (a `<!-- draw: -->` output is cached under a key that does not cover the
results files).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

from docs_build import costmodel as cm
from docs_build import steptime
from docs_build.compiled.results import CompiledResultsError, program, results

CHART = re.compile(r"<!-- overlap-chart: ([^/]+?) / ([^>]+?) -->")
HIDE_TABLE = "<!-- overlap-hide -->"
HIDE_SAID = "<!-- overlap-hide-said -->"
# The chips of the hide table, each with the 8-device target its FSDP step was compiled for.
HIDE_TARGETS = {"v5e": "v5e:2x4", "v5p": "v5p:2x2x2", "h100": "h100:1x8"}

COLUMN, LEFT, LANE, GAP, FONT = 22, 78, 26, 8, 13
LINK_COLOUR, MATMUL_COLOUR = "#2e5f8a", "#2e7d32"


def find(target: str, name: str, data: dict | None = None) -> dict:
    """A compiled program: a training step (or its options variant) or an advanced page's."""
    data = data or results()
    try:
        return program(target, name, data)
    except CompiledResultsError:
        for p in data["advanced"]["programs"]:
            if p["target"] == target and p["strategy"] == name:
                return p
        raise


@dataclass(frozen=True)
class Span:
    """One collective in program order: columns `first`..`last` (equal when synchronous),
    and the matmuls the program runs between them."""

    kind: str
    name: str
    shapes: tuple[str, ...]
    first: int
    last: int
    matmuls: int

    @property
    def asynchronous(self) -> bool:
        return self.last > self.first


def spans(schedule: list[list]) -> tuple[list[Span], list[tuple[int, int]]]:
    """The collectives of a schedule as spans, and its matmul runs as (column, count).

    Each row of the schedule is one column: a start opens a span that its done (the next
    done of the same kind still open; XLA nests none here) closes."""
    out: list[Span] = []
    matmuls: list[tuple[int, int]] = []
    open_: dict[str, list] = {}
    for column, (opcode, what, shapes) in enumerate(schedule):
        if opcode == "matmul":
            matmuls.append((column, what))
            for pending in open_.values():
                for span in pending:
                    span["matmuls"] += what
        elif opcode.endswith("-start"):
            kind = opcode.removesuffix("-start")
            open_.setdefault(kind, []).append(
                {
                    "kind": kind,
                    "name": what,
                    "shapes": tuple(shapes or ()),
                    "first": column,
                    "matmuls": 0,
                }
            )
        elif opcode.endswith("-done"):
            kind = opcode.removesuffix("-done")
            if not open_.get(kind):
                raise ValueError(f"{what} ends a {kind} that no start opened")
            span = open_[kind].pop(0)
            out.append(Span(**span, last=column))
        else:
            out.append(Span(opcode, what, tuple(shapes or ()), column, column, 0))
    if any(open_.values()):
        raise ValueError(f"a start without its done: {open_}")
    return sorted(out, key=lambda s: s.first), matmuls


def drawn(p: dict) -> tuple[list[list], dict | None]:
    """What a chart draws of a program: its entry computation's schedule, or, where the
    program recorded a loop that holds collectives (XLA's own collective matmul puts its
    permutes and matmuls in a `while`), that loop's body; the words below the chart list
    what the entry runs outside it. The loop is returned too (None for the entry)."""
    loops = p.get("loops", [])
    if not loops:
        return p["schedule"], None
    if len(loops) > 1:
        raise ValueError(
            f"{p['target']} / {p['strategy']}: {len(loops)} loops hold collectives; "
            "a chart draws one"
        )
    return loops[0]["schedule"], loops[0]


def describe(target: str, name: str, data: dict | None = None) -> list[str]:
    """The drawing in words: one line per collective and per run of matmuls, in order."""
    return _words(drawn(find(target, name, data))[0])


def outside(target: str, name: str, data: dict | None = None) -> list[str]:
    """What the entry computation runs beside a drawn loop, in words (empty if nothing)."""
    p = find(target, name, data)
    _, loop = drawn(p)
    return _words(p["schedule"]) if loop is not None and p["schedule"] else []


def _words(schedule: list[list]) -> list[str]:
    collectives, matmuls = spans(schedule)
    if not collectives:
        return ["No collective in the program's entry computation."]
    events = [(s.first, 0, s) for s in collectives] + [(c, 1, n) for c, n in matmuls]
    lines = []
    for _, is_matmul, item in sorted(events, key=lambda e: (e[0], e[1])):
        if is_matmul:
            lines.append(f"{item} matmul" + ("s" if item > 1 else ""))
            continue
        shapes = ", ".join(item.shapes)
        if item.asynchronous:
            during = (
                f"{item.matmuls} matmul{'s' if item.matmuls != 1 else ''} run while it travels"
                if item.matmuls
                else "nothing runs while it travels"
            )
            lines.append(f"{item.kind} starts ({shapes}); {during}; then it is done")
        else:
            lines.append(f"{item.kind}, synchronous ({shapes})")
    return lines


def svg(target: str, name: str, data: dict | None = None) -> str:
    p = find(target, name, data)
    rows, _ = drawn(p)
    collectives, matmuls = spans(rows)
    columns = max(len(rows), 1)
    width = LEFT + columns * COLUMN + GAP
    height = 2 * LANE + 3 * GAP + FONT
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" '
        f'aria-label="{html.escape(f"{target}, {name}: collectives and matmuls in program order")}" '
        f'font-size="{FONT}" font-family="sans-serif" fill="currentColor">',
        f'<text x="0" y="{GAP + LANE * 0.7:.1f}">collectives</text>',
        f'<text x="0" y="{2 * GAP + LANE * 1.7:.1f}">matmuls</text>',
    ]
    for s in collectives:
        x = LEFT + s.first * COLUMN + 2
        w = (s.last - s.first + 1) * COLUMN - 4
        kind = "asynchronous" if s.asynchronous else "synchronous"
        fill = (
            f'fill="{LINK_COLOUR}" fill-opacity="0.35" stroke="{LINK_COLOUR}"'
            if s.asynchronous
            else f'fill="{LINK_COLOUR}"'
        )
        parts.append(
            f'<rect class="collective" data-kind="{s.kind}" data-first="{s.first}" '
            f'data-last="{s.last}" data-matmuls="{s.matmuls}" x="{x}" y="{GAP}" '
            f'width="{w}" height="{LANE}" {fill}><title>{html.escape(s.name)}: {kind} '
            f"{s.kind}, {html.escape(', '.join(s.shapes))}</title></rect>"
        )
    for column, count in matmuls:
        x = LEFT + column * COLUMN + 2
        y = 2 * GAP + LANE
        parts.append(
            f'<rect class="matmul" data-column="{column}" data-count="{count}" x="{x}" '
            f'y="{y}" width="{COLUMN - 4}" height="{LANE}" fill="{MATMUL_COLOUR}">'
            f"<title>{count} matmul{'s' if count > 1 else ''}</title></rect>"
        )
        parts.append(
            f'<text x="{x + (COLUMN - 4) / 2:.1f}" y="{y + LANE + FONT + 2}" '
            f'text-anchor="middle">{count}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def chart(target: str, name: str, data: dict | None = None) -> str:
    """The drawing and its reading in words, as page Markdown."""
    target, name = target.strip(), name.strip()
    items = "\n".join(
        f"{i}. {html.escape(line)}"
        for i, line in enumerate(describe(target, name, data), 1)
    )
    _, loop = drawn(find(target, name, data))
    where = "the entry computation"
    if loop is not None:
        runs = loop["trip_count"]
        times = {None: "an unknown number of times", 1: "once", 2: "twice"}.get(
            runs, f"{runs} times"
        )
        where = f"the body of the loop XLA made (it runs {times} per call)"
    caption = (
        f"{html.escape(name)}, compiled for {html.escape(target)}: {where} "
        "from its first collective to its last, in program order (not time). A pale bar "
        "runs from an asynchronous collective's start to its done; a solid one is a "
        "synchronous collective; green boxes are runs of matmuls, with their count."
    )
    besides = outside(target, name, data)
    if besides:
        listed = "\n".join(f"- {html.escape(line)}" for line in besides)
        items += f"\n\nOutside the loop, the entry computation runs:\n\n{listed}"
    return (
        f'<figure class="overlap-chart" data-target="{html.escape(target)}" '
        f'data-program="{html.escape(name)}">\n{svg(target, name, data)}\n'
        f"<figcaption>{caption}</figcaption>\n</figure>\n\n"
        f"In words:\n\n{items}\n"
    )


# ---------------------------------------------------------------------------------------------
# When a gather hides: bytes / link bandwidth <= FLOPs / peak.


@dataclass(frozen=True)
class Hide:
    chip: str  # a key of costmodel.LINKS
    target: str
    layer: int  # 1 or 2: the kernel gathered
    width: int  # bytes per element the compiled program gathers
    gather_bytes: float  # what one device receives by the ring model
    send_seconds: float
    behind: str  # the matmul it could hide behind
    flops: float  # that matmul's FLOPs on one device (0: none before it)
    compute_seconds: float
    rows_needed: float  # rows per device at which the two are equal

    @property
    def hides(self) -> bool:
        return self.flops > 0 and self.send_seconds <= self.compute_seconds


def hide_rows(data: dict | None = None) -> list[Hide]:
    """Each kernel's gather in the compiled FSDP step, on each chip of HIDE_TARGETS."""
    data = data or results()
    model = data["model"]
    d, hidden, batch = model["d"], model["hidden"], model["batch"]
    rows = []
    for key, target in HIDE_TARGETS.items():
        p = find(target, "FSDP", data)
        n = p["mesh"][next(iter(p["mesh"]))]
        width = cm.plan_of(p).width
        dtype = "bfloat16" if width == 2 else "float32"
        peak = steptime.peak(key, dtype)
        link = cm.LINKS[key].within
        gathered = (n - 1) / n * d * hidden * width
        send = gathered / link
        # the same per-device matmul size for both layers: (batch/n) x d x hidden
        flops = 2 * batch / n * d * hidden
        needed = (n - 1) / n * width * peak / (2 * link)
        for layer in (1, 2):
            behind = flops if layer == 2 else 0.0
            rows.append(
                Hide(
                    chip=key,
                    target=target,
                    layer=layer,
                    width=width,
                    gather_bytes=gathered,
                    send_seconds=send,
                    behind="layer 1's forward matmul"
                    if layer == 2
                    else "none in the step",
                    flops=behind,
                    compute_seconds=behind / peak,
                    rows_needed=needed,
                )
            )
    return rows


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.3g} µs"


def hide_table(data: dict | None = None) -> str:
    data = data or results()
    model = data["model"]
    n_rows = model["batch"] // 8
    lines = [
        "| chip (target) | kernel gathered | width | received per device | at link rate "
        "| hides behind | its FLOPs per device | at peak | hides? | rows per device to hide |",
        "|---|---|---|---:|---:|---|---:|---:|---|---:|",
    ]
    for h in hide_rows(data):
        c = cm.LINKS[h.chip]
        dtype = "bf16" if h.width == 2 else "f32"
        lines.append(
            f"| {c.chip} ({h.target}) | layer {h.layer} | {dtype} "
            f"| {h.gather_bytes / 2**20:.2f} MiB | {_us(h.send_seconds)} | {h.behind} "
            f"| {f'{h.flops / 1e6:,.0f} M' if h.flops else '-'} "
            f"| {_us(h.compute_seconds) if h.flops else '-'} "
            f"| {'yes' if h.hides else 'no'} "
            f"| {f'{h.rows_needed:,.0f}' if h.flops else '-'} |"
        )
    sources = "; ".join(
        f"{cm.LINKS[k].chip}: [{cm.LINKS[k].source}]({cm.LINKS[k].url})"
        for k in HIDE_TARGETS
    )
    caption = (
        f"The FSDP step of the MLP (d = {model['d']}, hidden = {model['hidden']}, batch "
        f"{model['batch']}: {n_rows} rows per device on 8), forward pass. Width: what the "
        "compiled program of that target gathers. Received: (N - 1)/N of the kernel, the "
        "ring model. At link rate: over the chip's own links (ICI, NVLink), one direction. "
        "At peak: the published dense peak for that width. A lower-bound model, not a "
        "measurement: every link busy, every FLOP at peak, nothing else in the way. Last "
        "column: (N - 1)/N · width · peak / (2 · link rate), the rows per device at which "
        f"the two times are equal. Published figures: {sources}."
    )
    from docs_build.compiled.pages import _boxed

    return _boxed(
        lines, caption, "The published figures are data in docs_build/costmodel.py."
    )


def hide_said(data: dict | None = None) -> str:
    """The hide table's last column in words, for prose: the rows per device from which
    the second kernel's gather hides behind the matmul before it on each chip, and the
    rows the compiled step has."""
    data = data or results()
    rows = [h for h in hide_rows(data) if h.flops]
    said = [
        f"{h.rows_needed:,.0f} on {cm.LINKS[h.chip].chip} "
        f"({'bf16' if h.width == 2 else 'f32'})"
        for h in rows
    ]
    said[0] = said[0].replace(" on ", " rows per device on ", 1)
    listed = ", ".join(said[:-1]) + " and " + said[-1]
    now = data["model"]["batch"] // 8
    hidden = [cm.LINKS[h.chip].chip for h in rows if h.hides]
    verdict = (
        f"it hides on {' and '.join(hidden)}" if hidden else "it hides on none of them"
    )
    return (
        "the FSDP step's gather of its second kernel can hide behind the first layer's "
        f"forward matmul only with at least {listed}, at the width each compiled program "
        f"gathers; the compiled step has {now} rows per device, so {verdict}"
    )


def fill(markdown: str) -> str:
    markdown = CHART.sub(lambda m: chart(*m.groups()), markdown)
    if HIDE_TABLE in markdown:
        markdown = markdown.replace(HIDE_TABLE, hide_table())
    if HIDE_SAID in markdown:
        markdown = markdown.replace(HIDE_SAID, hide_said())
    return markdown
