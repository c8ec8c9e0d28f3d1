"""Turn what the examples print and draw into what the pages show.

The docs build runs every page's code with `capture()` around each block: plain prints become
text, and anything drawn with rich (such as `jax.debug.visualize_array_sharding`) becomes an
inline SVG that needs no font or script from anywhere else.
"""

from __future__ import annotations

import contextlib
import html
import io
import itertools
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field

# Rich lays text out in cells 0.61 em wide on lines 1.22 em tall (its SVG defaults); every text
# run carries a textLength, so any monospace font fills the same box.
_CHAR_HEIGHT = 20
_CHAR_WIDTH = _CHAR_HEIGHT * 0.61
_LINE_HEIGHT = _CHAR_HEIGHT * 1.22

# Rich's own template, less the window chrome and the @font-face rules that point at a CDN.
# Braces are doubled for str.format; @W@ and @H@ are filled in before rich sees it.
_SVG_TEMPLATE = """\
<svg class="rich-svg" viewBox="0 0 @W@ @H@" width="@W@" height="@H@" \
xmlns="http://www.w3.org/2000/svg" role="img" aria-label="@LABEL@">
<style>
.{unique_id}-matrix {{ font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, \
"Liberation Mono", "DejaVu Sans Mono", monospace; font-size: {char_height}px; }}
{styles}
</style>
<defs>
{lines}
</defs>
{backgrounds}
<g class="{unique_id}-matrix">
{matrix}
</g>
</svg>"""

_figure_ids = itertools.count()


@dataclass
class Figure:
    """One rich drawing, as SVG, with its plain-text reading for screen readers and search."""

    svg: str
    text: str


@dataclass
class Capture:
    """What one block printed and drew, in order: `str` for text, `Figure` for drawings."""

    chunks: list[str | Figure] = field(default_factory=list)
    _text: list[str] = field(default_factory=list)
    _consoles: list[object] = field(default_factory=list)

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

    def _start_figure(self, console: object) -> None:
        self._end_text()
        self._consoles.append(console)
        self.chunks.append(console)  # type: ignore[arg-type]  # replaced by a Figure in _finish

    def _finish(self) -> None:
        self._end_text()
        self.chunks = [c if isinstance(c, str) else console_figure(c) for c in self.chunks]
        self.chunks = [c for c in self.chunks if not isinstance(c, Figure) or c.text.strip()]


@contextlib.contextmanager
def capture() -> Iterator[Capture]:
    """Record stdout as text and every rich Console drawn to as a Figure, in order."""
    import rich.console

    result = Capture()
    original = rich.console.Console

    class RecordingConsole(original):  # type: ignore[misc, valid-type]
        def __init__(self, *args, **kwargs):
            kwargs.update(
                record=True, file=io.StringIO(), force_terminal=True, color_system="truecolor"
            )
            super().__init__(*args, **kwargs)
            result._start_figure(self)

    rich.console.Console = RecordingConsole
    saved_stdout = sys.stdout
    sys.stdout = result  # type: ignore[assignment]
    try:
        yield result
    finally:
        sys.stdout = saved_stdout
        rich.console.Console = original
        result._finish()


def console_figure(console) -> Figure:
    """Export a recording rich Console as a self-contained SVG cropped to what was drawn."""
    text = console.export_text(clear=False, styles=False)
    lines = text.rstrip().splitlines()
    columns = max((len(line.rstrip()) for line in lines), default=0)
    label = "Sharding diagram: " + " ".join(" ".join(lines).split())
    width = f"{columns * _CHAR_WIDTH:g}"
    height = f"{len(lines) * _LINE_HEIGHT + 4:g}"
    template = (
        _SVG_TEMPLATE.replace("@W@", width)
        .replace("@H@", height)
        .replace("@LABEL@", html.escape(label, quote=True).replace("{", "{{").replace("}", "}}"))
    )
    console.width = max(columns, 1)
    svg = console.export_svg(code_format=template, unique_id=f"sd{next(_figure_ids)}", clear=False)
    svg = "\n".join(line for line in svg.splitlines() if line.strip())
    if re.search(r"url\(\s*['\"]?https?:", svg):
        raise AssertionError("an exported diagram refers to a remote resource")
    return Figure(svg=svg, text="\n".join(line.rstrip() for line in lines))
