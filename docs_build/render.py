"""Turn what the examples print and draw into what the pages show.

The docs build runs every page's code with `capture()` around each block: plain prints become
text, and anything drawn with rich (such as `jax.debug.visualize_array_sharding`) becomes an
inline SVG that needs no font or script from anywhere else.
"""

from __future__ import annotations

import contextlib
import html
import importlib.metadata
import io
import itertools
import math
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field

from rich.terminal_theme import TerminalTheme

from docs_build import figures
from docs_build import timeline as step_timeline

# Rich's SVG export puts text 20 px high on lines 1.22 times that; every text run carries a
# textLength, so any monospace font fills the same box.
_CHAR_HEIGHT = 20
_LINE_HEIGHT = _CHAR_HEIGHT * 1.22

# Rich's own template, less the window chrome and the @font-face rules that point at a CDN.
# Braces are doubled for str.format; @W@ and @H@ are filled in before rich sees it.
_SVG_TEMPLATE = """\
<svg class="rich-svg" viewBox="0 0 @W@ @H@" width="@W@" height="@H@" \
xmlns="http://www.w3.org/2000/svg" role="img" aria-label="@LABEL@" \
shape-rendering="crispEdges">
<style>
.{unique_id}-matrix {{ font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, \
"Liberation Mono", "DejaVu Sans Mono", monospace; font-size: {char_height}px; }}
{styles}
</style>
{backgrounds}
<g class="{unique_id}-matrix">
{matrix}
</g>
</svg>"""

_figure_ids = itertools.count()
# A colour no drawing uses, given to uncoloured text and then replaced by currentColor.
_PLAIN_TEXT = "#010203"
# The 16 ANSI colours (for text printed as "[red]..." and the like) in mid tones that read on
# a white and on a near-black page.
_ANSI = [
    (110, 110, 110),
    (200, 40, 40),
    (30, 140, 60),
    (170, 120, 0),
    (40, 90, 200),
    (150, 60, 170),
    (0, 140, 150),
    (128, 128, 128),
]
_THEME = TerminalTheme((255, 255, 255), (1, 2, 3), _ANSI, _ANSI)


@dataclass
class Figure:
    """One rich drawing, as SVG, with its plain-text reading for screen readers and search."""

    svg: str
    text: str


@dataclass
class Capture:
    """What one block printed and drew, in order: `str` for text, `Figure` for drawings."""

    chunks: list[str | Figure | Html] = field(default_factory=list)
    _text: list[str] = field(default_factory=list)

    def write(self, text: str) -> int:
        self._text.append(text)
        return len(text)

    def flush(self) -> None:
        pass

    def _end_text(self) -> None:
        text = "".join(self._text)
        self._text.clear()
        if text:
            self.chunks.append(text)

    def add(self, drawing: Html) -> None:
        """A drawing the build made from the block's variables, after what it printed."""
        self._end_text()
        self.chunks.append(drawing)

    def _start_figure(self, console: object) -> None:
        self._end_text()
        self.chunks.append(console)  # type: ignore[arg-type]  # replaced by a Figure in _finish

    def _add_plots(self) -> None:
        """Every open matplotlib figure becomes a Figure here, as a notebook would show it."""
        pyplot = sys.modules.get("matplotlib.pyplot")
        if pyplot is None:
            return
        for number in pyplot.get_fignums():
            self._end_text()
            self.chunks.append(plot_figure(pyplot.figure(number)))
        pyplot.close("all")

    def _finish(self) -> None:
        self._end_text()
        self.chunks = [
            c if isinstance(c, (str, Figure, Html)) else console_figure(c)
            for c in self.chunks
        ]
        self.chunks = [
            c for c in self.chunks if not isinstance(c, Figure) or c.text.strip()
        ]


@contextlib.contextmanager
def capture() -> Iterator[Capture]:
    """Record stdout as text, and every rich Console and matplotlib figure as a Figure."""
    import rich
    import rich.console

    # First, before anything is patched: it raises when JAX has moved what it replaces.
    saved_colours = _distinct_colours()
    result = Capture()
    console_class = rich.console.Console
    original_init = console_class.__init__

    # Patch the class itself rather than the name, so that a `Console` imported in an earlier
    # block records too.
    def recording_init(self, *args, **kwargs):
        kwargs.update(
            record=True,
            file=io.StringIO(),
            force_terminal=True,
            color_system="truecolor",
        )
        original_init(self, *args, **kwargs)
        result._start_figure(self)

    console_class.__init__ = recording_init
    # A table of data (a rich Table with a header) becomes an HTML table, which reflows and
    # reads at the page's size; its plain reading is what rich would have printed.
    original_print = console_class.print

    def recording_print(self, *objects, **kwargs):
        if objects and all(_is_data_table(o) for o in objects):
            for table in objects:
                plain = console_class.__new__(console_class)
                original_init(
                    plain, file=io.StringIO(), width=self.width, color_system=None
                )
                original_print(plain, table)
                result.add(rich_table(table, plain.file.getvalue()))
            return
        original_print(self, *objects, **kwargs)

    console_class.print = recording_print
    rich._console = None  # `rich.print` makes its console anew, inside this capture
    pyplot = sys.modules.get("matplotlib.pyplot")
    saved_show = pyplot.show if pyplot else None
    if pyplot:
        # plt.show() draws where it is called; figures still open at the end come last.
        pyplot.show = lambda *args, **kwargs: result._add_plots()
    saved_stdout = sys.stdout
    sys.stdout = result  # type: ignore[assignment]
    try:
        yield result
        result._add_plots()
    finally:
        sys.stdout = saved_stdout
        if pyplot:
            pyplot.show = saved_show
        console_class.__init__ = original_init
        console_class.print = original_print
        rich._console = None
        for name, function in zip(PRIVATE_DRAWING, saved_colours, strict=True):
            setattr(_debugging(), name, function)
        result._finish()


def _is_data_table(renderable) -> bool:
    """A rich Table with a header row: data, not a drawing (JAX's sharding diagrams are
    tables without one)."""
    from rich.table import Table

    return isinstance(renderable, Table) and renderable.show_header


def _cell_html(cell) -> str:
    """A cell's text as rich shows it (markup read, styles dropped), line breaks kept."""
    from rich.text import Text

    if isinstance(cell, Text):
        text = cell.plain
    elif isinstance(cell, str):
        text = Text.from_markup(cell).plain
    else:
        text = str(cell)
    return html.escape(text).replace("\n", "<br>")


def is_data_table(html_text: str) -> bool:
    """Whether a drawn table's HTML is a table of data (`rich_table`'s, which carries no
    class or inline style), not a per-device table or another styled card."""
    return html_text.startswith("<table>")


def rich_table(table, text: str) -> Html:
    """A rich Table as an HTML table: its title the caption, its header the column heads, the
    first column the row heads, right-justified columns right-aligned; rich's caption
    follows it in italics. `text` is the table as rich prints it, the plain reading."""
    columns = table.columns
    cells = [list(column.cells) for column in columns]

    def align(column) -> str:
        return ' style="text-align:right"' if column.justify == "right" else ""

    head = "".join(
        f'<th scope="col"{align(c)}>{_cell_html(c.header)}</th>' for c in columns
    )
    rows = []
    for r in range(table.row_count):
        row = []
        for i, column in enumerate(columns):
            tag, scope = ("th", ' scope="row"') if i == 0 else ("td", "")
            row.append(
                f"<{tag}{scope}{align(column)}>{_cell_html(cells[i][r])}</{tag}>"
            )
        rows.append("<tr>" + "".join(row) + "</tr>")
    caption = f"<caption>{_cell_html(table.title)}</caption>" if table.title else ""
    out = (
        f"<table>{caption}<thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
    if table.caption:
        out += f"\n<p><em>{_cell_html(table.caption)}</em></p>"
    text = "\n".join(line.rstrip() for line in text.splitlines()).strip("\n")
    return Html(html=out, text=text)


def plot_figure(figure) -> Figure:
    """A matplotlib figure as inline SVG: text kept as text, no blank line, sized to fit."""
    import matplotlib

    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "site"}):
        figure.savefig(buffer, format="svg", bbox_inches="tight")
    svg = buffer.getvalue()
    svg = svg[svg.index("<svg") :]
    svg = "\n".join(line for line in svg.splitlines() if line.strip())
    titles = [ax.get_title() for ax in figure.axes if ax.get_title()]
    labels = [f"{ax.get_xlabel()} / {ax.get_ylabel()}" for ax in figure.axes]
    text = "Plot: " + "; ".join(titles or labels or ["figure"])
    svg = svg.replace(
        "<svg ", f'<svg class="plot" role="img" aria-label="{html.escape(text)}" ', 1
    )
    return Figure(svg=svg, text=text)


# The private functions of jax._src.debugging that _distinct_colours replaces.
PRIVATE_DRAWING = ("make_color_iter", "_get_text_color")


def _debugging():
    from jax._src import debugging

    return debugging


def _distinct_colours():
    """Give every block of a diagram its own colour, and labels the contrast to read them.

    jax before 0.12 walked its colour map in steps of n/2 + 1, which for a 2-way (or 6-way)
    split lands on the same colour again, so both halves of an array looked like one block
    (0.12 fixed the step; the same colours on every release keep diagrams comparable). Its
    label colour uses a brightness cut-off, which writes white on some light colours. Only
    colours change: layout and labels are jax's own. Returns what it replaced.

    This is the build's one reach into JAX's internals for drawing; a release that moves
    these functions fails here, loudly, rather than drawing diagrams that differ silently.
    """
    debugging = _debugging()
    missing = [
        name for name in PRIVATE_DRAWING if not callable(getattr(debugging, name, None))
    ]
    if missing:
        raise RuntimeError(
            f"jax._src.debugging no longer has {', '.join(missing)} (jax "
            f"{importlib.metadata.version('jax')}): docs_build/render.py replaces them to "
            "colour sharding diagrams; update _distinct_colours for this release."
        )
    original = tuple(getattr(debugging, name) for name in PRIVATE_DRAWING)

    def make_color_iter(color_map, num_rows, num_cols):
        count = num_rows * num_cols
        step = next(
            s for s in range(count // 2 + 1, 2 * count + 2) if math.gcd(s, count) == 1
        )
        for i in range(count):
            yield color_map(((i * step) % count) / max(count - 1, 1))

    debugging.make_color_iter = make_color_iter
    debugging._get_text_color = readable_text_colour
    return original


def _luminance(hex_colour: str) -> float:
    """WCAG relative luminance of a #rrggbb colour."""
    channels = [int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = (
        c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels
    )
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(one: str, other: str) -> float:
    """WCAG contrast ratio of two #rrggbb colours, from 1 to 21."""
    light, dark = sorted((_luminance(one), _luminance(other)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def readable_text_colour(background: str) -> str:
    """Black or white, whichever has the higher WCAG contrast on `background`."""
    lum = _luminance(background)
    return "#000000" if (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) else "#ffffff"


def console_figure(console) -> Figure:
    """Export a recording rich Console as a self-contained SVG cropped to what was drawn."""
    text = "\n".join(
        line.rstrip() for line in console.export_text(clear=False).splitlines()
    )
    label = "Sharding diagram: " + " ".join(text.split())
    template = _SVG_TEMPLATE.replace(
        "@LABEL@", html.escape(label, quote=True).replace("{", "{{").replace("}", "}}")
    )
    svg = console.export_svg(
        code_format=template,
        theme=_THEME,
        unique_id=f"sd{next(_figure_ids)}",
        clear=False,
    )
    # Text without a colour of its own (table rules, headers) takes the page's text colour,
    # so it reads in the light and the dark scheme alike.
    svg = svg.replace(f"fill: {_PLAIN_TEXT}", "fill: currentColor")
    # Rich writes each line break as a text run of its own at the console's right edge.
    svg = re.sub(r"<text\b[^>]*>\s*</text>", "", svg)
    svg = compact(svg)
    width, height = _drawn_extent(svg)
    svg = svg.replace("@W@", f"{width:g}").replace("@H@", f"{height:g}")
    svg = "\n".join(line for line in svg.splitlines() if line.strip())
    if re.search(r"url\(\s*['\"]?https?:", svg):
        raise AssertionError("an exported diagram refers to a remote resource")
    return Figure(svg=svg, text=text.strip("\n"))


_RECT = re.compile(
    r'<rect fill="(#\w+)" x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)"'
    r' shape-rendering="crispEdges"/>'
)


def compact(svg: str) -> str:
    """The same drawing in about half the bytes, for pages that hold dozens of them.

    Rich clips each line of text to its row (the text never leaves it: each run has its
    textLength), paints one background rect per run of characters, and writes every space
    as `&#160;`. The clips go, the rects that touch along a row with the same fill become
    one (crisp edges are set once, on the root), and spaces are written as the character.
    """
    svg = re.sub(r' clip-path="url\(#[\w-]+\)"', "", svg)
    pieces, last, rects = [], 0, list(_RECT.finditer(svg))
    i = 0
    while i < len(rects):
        fill, x, y, width, height = rects[i].groups()
        right, j = float(x) + float(width), i
        while j + 1 < len(rects):
            nxt = rects[j + 1]
            between = svg[rects[j].end() : nxt.start()]
            f2, x2, y2, w2, h2 = nxt.groups()
            if between.strip() or (f2, y2, h2) != (fill, y, height):
                break
            if abs(float(x2) - right) > 0.05:
                break
            right, j = float(x2) + float(w2), j + 1
        pieces.append(svg[last : rects[i].start()])
        width = round(right - float(x), 2)
        pieces.append(
            f'<rect fill="{fill}" x="{x}" y="{y}" width="{width:g}" height="{height}"/>'
        )
        last, i = rects[j].end(), j + 1
    pieces.append(svg[last:])
    return "".join(pieces).replace("&#160;", "\u00a0")


def _drawn_extent(svg: str) -> tuple[float, float]:
    """Right and bottom edges of the coloured cells and text."""
    drawn = svg[svg.index("</style>") :]
    right = bottom = 0.0
    for tag in re.finditer(r"<(rect|text)\b([^>]*)>", drawn):
        attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', tag.group(2)))
        x, y = float(attrs.get("x", 0)), float(attrs.get("y", 0))
        if tag.group(1) == "rect":
            right = max(right, x + float(attrs["width"]))
            bottom = max(bottom, y + float(attrs["height"]))
        else:
            right = max(right, x + float(attrs.get("textLength", 0)))
            bottom = max(bottom, y + _LINE_HEIGHT - _CHAR_HEIGHT)
    return round(right, 2), round(bottom, 2)


# ---------------------------------------------------------------------------------------------
# Per-device tables: what every device held before a collective and after it, drawn from the
# two arrays a page's block computed (see `DRAWINGS` and `<!-- draw: ... -->` in outputs.py).

# One colour per device, each with AA contrast (at least 4.5:1) on the table's white card.
DEVICE_COLOURS = [
    "#c0392b", "#2e5f8a", "#2e7d32", "#b35900",
    "#7b4f9e", "#00796b", "#b0306a", "#7a5230",
]  # fmt: skip
CARD_INK, CARD_PAPER = "#1a1a1a", "#ffffff"  # a white card reads on a dark page too


@dataclass
class Html:
    """A table as HTML, styled inline so it reads the same in a notebook, and its plain text."""

    html: str
    text: str


def _device_rows(array, role: str) -> list[tuple[object, object]]:
    import numpy as np

    shards = sorted(array.addressable_shards, key=lambda s: s.device.id)
    if array.ndim == 0 or any(s.data.shape[0] != 1 for s in shards):
        raise ValueError(
            f"per_device_table needs `{role}` with one row per device, as per_device "
            f"returns it; got an array of shape {array.shape}."
        )
    return [(s.device, np.asarray(s.data[0])) for s in shards]


def _tokens(block, colours: dict) -> list[tuple[str, str | None]]:
    if block.ndim == 0:
        value = block.item()
        return [(f"{value:g}", colours.get(value))]
    parts = [_tokens(part, colours) for part in block]
    tokens: list[tuple[str, str | None]] = []
    for i, part in enumerate(parts):
        if block.ndim > 1:  # rows of a 2-D block in brackets, side by side
            tokens += [("[", None), *part, ("]", None)]
        else:
            tokens += ([(" ", None)] if i else []) + part
    return tokens


def _runs(block, colours: dict) -> list[tuple[str, str | None]]:
    """The text of a block as (text, colour) runs, neighbours of one colour in one run."""
    tokens = _tokens(block, colours)
    for i in range(1, len(tokens) - 1):  # a space between two of a colour takes it
        if tokens[i] == (" ", None) and tokens[i - 1][1] == tokens[i + 1][1]:
            tokens[i] = (" ", tokens[i - 1][1])
    runs: list[tuple[str, str | None]] = []
    for text, colour in tokens:
        if runs and runs[-1][1] == colour:
            runs[-1] = (runs[-1][0] + text, colour)
        else:
            runs.append((text, colour))
    return runs


def _cell(runs: list[tuple[str, str | None]]) -> str:
    return "".join(
        html.escape(text)
        if colour is None
        else f'<span style="color:{colour}">{html.escape(text)}</span>'
        for text, colour in runs
    )


def per_device_table(before, after, title: str) -> Html:
    """What each device held `before` and `after`, one row per device.

    Both arrays hold one row per device (as `per_device` on the collectives page returns
    them). Each device's numbers are in its colour; a number only one device held before
    keeps that device's colour wherever it ends up, so data that moved can be followed.
    A result that holds any number no single device held is new data: no colour at all.
    Integers made from floats (positions from `axis_index`) are not data either.
    """
    before_rows = _device_rows(before, "before")
    after_rows = _device_rows(after, "after")
    owner: dict[object, str | None] = {}
    for i, (_, block) in enumerate(before_rows):
        for value in block.ravel().tolist():
            owner[value] = None if value in owner else DEVICE_COLOURS[i % 8]
    # Colours follow data that moved. A result with any number no single device held (a sum,
    # a mean) is new data throughout, even where one of its numbers happens to equal some
    # device's: 60 from adding 0 + 10 + 20 + 30 is not device 6's 60.
    moved = {v for _, block in after_rows for v in block.ravel().tolist()}
    if after.dtype != before.dtype or not all(owner.get(v) for v in moved):
        owner = {}
    shapes = f"per device: {before_rows[0][1].shape} -> {after_rows[0][1].shape}"
    rows, text = [], [title, "device | before | after"]
    pairs = zip(before_rows, after_rows, strict=True)
    for i, ((device, held), (_, got)) in enumerate(pairs):
        colour = DEVICE_COLOURS[i % 8]
        own = dict.fromkeys(held.ravel().tolist(), colour)
        held_runs, got_runs = _runs(held, own), _runs(got, owner)
        rows.append(
            f'<tr><th scope="row" style="color:{colour}">{html.escape(str(device))}</th>'
            f"<td>{_cell(held_runs)}</td><td>{_cell(got_runs)}</td></tr>"
        )
        text.append(
            f"{device} | {''.join(t for t, _ in held_runs)} | "
            f"{''.join(t for t, _ in got_runs)}"
        )
    text.append(shapes)
    table = (
        f'<table class="per-device" style="color:{CARD_INK};background:{CARD_PAPER}">'
        # The caption sits outside the table's box: it gets the card's colours of its own.
        f'<caption style="color:{CARD_INK};background:{CARD_PAPER}">'
        f"{html.escape(title)}<br><small>{html.escape(shapes)}</small></caption>"
        '<thead><tr><th scope="col">device</th><th scope="col">before</th>'
        '<th scope="col">after</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
    return Html(html=table, text="\n".join(text))


def timeline(spans, title: str) -> Figure:
    """One step of a sharded program, one lane per device, drawn from its profiler trace
    (see docs_build/timeline.py)."""
    svg, text = step_timeline.draw(spans, title)
    return Figure(svg=svg, text=text)


def pipeline_chart(table, num_stages: int, title: str) -> Figure:
    """A pipeline schedule, one lane per stage, F and B boxes per step (see
    docs_build/pipeline_chart.py)."""
    from docs_build import pipeline_chart as chart

    if not isinstance(table, dict):
        table = chart.from_ran(table)
    svg, text = chart.draw(table, num_stages, title)
    return Figure(svg=svg, text=text)


def decode_roofline(rows, title: str) -> Figure:
    """Decode's FLOPs per byte beside each chip's (see docs_build/roofline.py)."""
    from docs_build import roofline

    svg, text = roofline.draw(rows, title)
    return Figure(svg=svg, text=text)


def decode_bound_table(rows) -> Html:
    """The batch above which decode is compute-bound on each chip (docs_build/roofline.py)."""
    from docs_build import roofline

    table, text = roofline.table(rows)
    return Html(html=table, text=text)


# What a page may draw with a `<!-- draw: ... -->` line after a block: the expression is
# evaluated with these names and the page's own variables, after the block has run.
DRAWINGS = {
    "per_device_table": per_device_table,
    "timeline": timeline,
    "pipeline_chart": pipeline_chart,
    "decode_roofline": decode_roofline,
    "decode_bound_table": decode_bound_table,
}
DRAWINGS.update(figures.DRAWINGS)
