"""The table of contents of a notebook page, headings' inline code included.

mkdocs-jupyter (0.26) makes a notebook page's table of contents from a Markdown copy of the
notebook (`nbconvert2.nb2md`) from which it first deletes every code span, so that a `#` line
inside backticks is not read as a heading; a heading such as "### `psum`" is then an empty
entry, and "## `axis_index`: where am I?" reads ": where am I?". `docs_build.hooks` has it call
`toc_tokens` below instead (its `_get_nb_toc_tokens`, looked up when a notebook is rendered):
the notebook's Markdown cells read by Python-Markdown itself, which tells fenced code from
headings, so a heading keeps its code as text, as the guide pages' tables of contents do. The
entries link to the ids the page's headings get from nbconvert (mkdocs-jupyter's `slugify` of
the heading's text), which Python-Markdown's own `slugify` gives for the same text; where two
headings have the same text, nbconvert gives both the same id while Python-Markdown numbers
the second (`_1`), so `unique_heading_ids` numbers the page's ids as well (the hook's
`on_page_content`), as the guide page's are.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import markdown
from markdown.extensions.toc import TocExtension, unique


def markdown_cells(notebook: Path) -> str:
    """The text of a notebook's Markdown cells, in order (code cells hold no headings)."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return "\n\n".join(
        "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        for cell in cells
        if cell["cell_type"] == "markdown"
    )


def toc_tokens(fpath: str, toc_depth: int) -> tuple[list[dict], str | None]:
    """mkdocs-jupyter's `_get_nb_toc_tokens(fpath, toc_depth)`: the TOC tokens and the title
    (the first level-1 heading) of the notebook at `fpath`."""
    md = markdown.Markdown(
        extensions=["fenced_code", TocExtension(toc_depth=toc_depth)]
    )
    md.convert(markdown_cells(Path(fpath)))
    tokens = md.toc_tokens
    title = next((t["name"] for t in tokens if t["level"] == 1), None)
    return tokens, title


HEADING = re.compile(r'<h([1-6]) id="([^"]*)">(.*?)</h\1>', re.DOTALL)


def unique_heading_ids(html: str) -> str:
    """A rendered notebook's headings, a repeated id numbered as `toc_tokens` numbers it
    (`compiled-for-tpu`, `compiled-for-tpu_1`), with their anchor links."""
    used: set[str] = set()

    def renumber(m: re.Match) -> str:
        level, given, inner = m.groups()
        new = unique(given, used)
        if new == given:
            return m.group(0)
        inner = inner.replace(f'href="#{given}"', f'href="#{new}"', 1)
        return f'<h{level} id="{new}">{inner}</h{level}>'

    return HEADING.sub(renumber, html)
