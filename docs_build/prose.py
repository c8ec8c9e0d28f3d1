"""Output blocks on a narrow screen: printed text keeps its lines, so that a table keeps its
columns and scrolls sideways; only an exception's message, which is prose, wraps.

`mark_prose_output` (run by the hooks on every page's HTML, notebook pages included) puts each
line of such a message in `<span class="output-prose">`, which the stylesheet wraps.
"""

from __future__ import annotations

import html
import re

# A line that starts an exception's message: `ValueError: ...`, `device_put: TypeError:`,
# `jax.errors.JaxRuntimeError: ...`, or a traceback's first line.
_EXCEPTION = re.compile(
    r"^(?:[\w.]+: )?(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Warning)(?::|$)"
    r"|^Traceback \(most recent call last\):"
)
# Two spaces between words: a column-aligned line (a table, an array), never a message's.
_COLUMNS = re.compile(r"\S {2,}\S")
_OUTPUT_CODE = re.compile(
    r'(<div class="[^"]*\boutput\b[^"]*"[^>]*>(?:(?!</div>).)*?<code>)(.*?)(</code>)',
    re.S,
)


def prose_lines(text: str) -> list[bool]:
    """For each line of a printed output, whether it is an exception's message: the line
    that names the exception and the lines after it, blank ones included, up to the first
    column-aligned line (printed by the code after it caught the exception)."""
    marks, in_message = [], False
    for line in text.split("\n"):
        if _EXCEPTION.match(line):
            in_message = True
        elif _COLUMNS.search(line.strip()):
            in_message = False
        marks.append(in_message and bool(line.strip()))
    return marks


def mark_prose_output(page_html: str) -> str:
    """A page's HTML with every exception message in its output blocks marked as prose."""

    def mark(found: re.Match) -> str:
        lines = found.group(2).split("\n")
        marks = prose_lines(html.unescape(found.group(2)))
        body = "\n".join(
            f'<span class="output-prose">{line}</span>' if prose else line
            for line, prose in zip(lines, marks, strict=True)
        )
        return found.group(1) + body + found.group(3)

    return _OUTPUT_CODE.sub(mark, page_html)
