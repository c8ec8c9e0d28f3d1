"""The home page's path: each section's reading time, and the list of every page.

docs/index.md holds markers that the hook fills from the navigation (MkDocs' own, in
mkdocs.yml's order) and from the pages themselves, so that nothing on the path is typed:

- `<!-- home: time SECTION -->`: how long SECTION takes to read, from the words of its pages'
  prose and the lines of code they show (`counts`), at `WORDS_PER_MINUTE` and
  `CODE_LINES_PER_MINUTE`, rounded up to 5 minutes;
- `<!-- home: rates -->`: those two rates, as the note under the path states them;
- `<!-- home: all pages -->`: each section's pages, linked by their titles.

tests/test_home.py holds the built page to these numbers and to the navigation.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import NamedTuple

from docs_build import outputs

# A reader who reads to learn, not to skim: slower than a novel's reader on prose, and a line
# of code every 6 seconds. Choices of this site, stated on the home page beside the times.
WORDS_PER_MINUTE = 200
CODE_LINES_PER_MINUTE = 10
ROUND_TO = 5  # minutes

MARKER = re.compile(r"<!-- home: (time (?P<section>[^>]+?)|rates|all pages) -->")
WORD = re.compile(r"[^\W_][\w'\u2019.-]*")  # with straight or curly apostrophes
LINK_TARGET = re.compile(r"\]\([^)]*\)|\]\[[^\]]*\]")
HTML = re.compile(r"<[^>]+>|<!--.*?-->", re.S)


class HomeError(Exception):
    """A marker names no section of the navigation."""


class Counts(NamedTuple):
    words: int  # words of prose: paragraphs, lists, tables and headings
    code_lines: int  # non-blank lines of the code blocks, includes expanded

    @property
    def minutes(self) -> float:
        return self.words / WORDS_PER_MINUTE + self.code_lines / CODE_LINES_PER_MINUTE


def counts(page: Path) -> Counts:
    """What a reader reads on `page`: the words of its prose and the lines of code it shows,
    outside its collapsed folds (setup, hints, solutions); outputs and generated tables are
    not counted (they are not in the Markdown)."""
    from markdown_it import MarkdownIt

    text = without_folds(page.read_text(encoding="utf-8"))
    words = code = 0
    for token in MarkdownIt("commonmark").enable("table").parse(text):
        if token.type in ("fence", "code_block"):
            shown = outputs.expand(token.content, f"{page} line {token.map[0] + 1}")
            code += sum(1 for line in shown.splitlines() if line.strip())
        elif token.type == "inline":
            prose = HTML.sub(" ", LINK_TARGET.sub("]", token.content))
            words += len(WORD.findall(prose))
    return Counts(words, code)


FOLD = re.compile(
    r"^(?P<indent>[ \t]*)\?\?\?[ \t]"
)  # `???+` opens expanded: it is read


def without_folds(text: str) -> str:
    """`text` without its collapsed folds: a fold's opening line and every line after it
    that is blank or indented more than that line."""
    out, fold = [], None  # fold: the indentation of the open fold's opening line
    for line in text.split("\n"):
        if fold is not None and (not line.strip() or line.startswith(fold + " ")):
            continue
        fold = None
        if m := FOLD.match(line):
            fold = m["indent"]
            continue
        out.append(line)
    return "\n".join(out)


def minutes(pages: list[Path]) -> int:
    """The reading time of `pages`, rounded up to `ROUND_TO` minutes."""
    total = sum(counts(page).minutes for page in pages)
    return ROUND_TO * max(1, math.ceil(total / ROUND_TO))


def duration(minutes: int) -> str:
    hours, rest = divmod(minutes, 60)
    if not hours:
        return f"{rest} min"
    return f"{hours} h" + (f" {rest} min" if rest else "")


def title(page: Path) -> str:
    """The page's title: its first level-1 heading (after any front matter)."""
    found = re.search(r"^# (.+)$", page.read_text(encoding="utf-8"), re.MULTILINE)
    if not found:
        raise HomeError(f"{page}: no title (a line `# ...`)")
    return found[1].strip()


def fill(
    markdown: str, sections: list[tuple[str, list[str]]], page: str = "index.md"
) -> str:
    """`markdown` with its home markers filled; `sections` are the navigation's sections:
    each title with its pages (paths under docs/), in order."""
    if not MARKER.search(markdown):
        return markdown
    found = dict(sections)
    base = Path(page).parent

    def link(target: str) -> str:
        return Path(target).relative_to(base).as_posix() if base.parts else target

    def replace(m: re.Match) -> str:
        if m["section"] is not None:
            if m["section"] not in found:
                raise HomeError(
                    f"{page}: {m[0]} names no section of the navigation "
                    f"({', '.join(found)})"
                )
            pages = [outputs.DOCS / p for p in found[m["section"]]]
            return duration(minutes(pages))
        if m[0] == "<!-- home: rates -->":
            return (
                f"{WORDS_PER_MINUTE} words of prose and {CODE_LINES_PER_MINUTE} lines "
                "of code a minute"
            )
        lines = []
        for name, pages in sections:
            links = " · ".join(f"[{title(outputs.DOCS / p)}]({link(p)})" for p in pages)
            lines.append(f"- **{name}**: {links}")
        return "\n".join(lines)

    return MARKER.sub(replace, markdown)
