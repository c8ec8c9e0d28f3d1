"""The error index: every error the site's examples print, linked to where it is explained.

`docs/guides/error-index.md` holds the marker `<!-- generated: error-index -->`, which the
build (`docs_build.hooks`) replaces with tables made from what each page's code printed in
the build's one run of it (`docs_build.outputs`): no row is typed. An error is a printed line
that starts with an exception class and `: ` (`ValueError: ...`), or with a label and then
one (`device_put: ValueError: ...`), which is how the pages print what they catch; a class
with nothing after it takes its message from the next line. Each is linked to the section
that shows it: the nearest heading above the block that printed it.

One row per message: the same error printed on several pages, or with other values (numbers,
shapes, specs and tuples in parentheses, the name of the reader's function), is one row,
showing the first printed text in reading order, with a link to every section that shows it.
Old spellings' errors (the migration pages) are rows like any other. Unlike printed outputs,
the tables stay in the search index: searching the site for the words of an error finds them.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from docs_build import outputs

MARKER = "<!-- generated: error-index -->"
ERROR = re.compile(r"^(?:[\w.]+: )?([A-Z]\w*(?:Error|Exception|Warning)):(?: (.*))?$")
# A message that quotes where the code ran (JAX's "This error occurs at source: ..."), which
# the page prints as Python's interactive interpreter names its inputs (`<python-input-19>`,
# see `outputs.Block.filename`), names the reader's own file or input instead, so the index
# leaves that sentence out.
RUNNER_NAME = outputs.PYTHON_INPUT
# What differs from run to run: a row must not hold it, or the reader's text never matches.
PER_RUN = re.compile(r"\b0x[0-9a-fA-F]{4,}|/tmp/|\bpid \d+")
LIMIT = (
    200  # characters of a message a row shows: the first sentences, enough to find it
)


class ErrorIndexError(ValueError):
    """A printed error the index cannot place, or cannot show as the reader would see it."""


@dataclass(frozen=True)
class Heading:
    line: int  # of the page, from 1
    level: int
    text: str  # as written, without its `{ ... }` attributes or links
    anchor: str  # the id the built page gives it


@dataclass(frozen=True)
class Printed:
    """One error line a page printed, and the section it is under."""

    page: str  # relative to docs/
    title: str  # the page's first heading
    block: str  # the block's name, for messages
    type: str
    message: str  # its first line, as printed
    heading: Heading


@dataclass
class Row:
    type: str
    text: str  # what the row shows: the first printed message, trimmed
    places: list[Printed] = field(default_factory=list)

    def sections(self) -> list[Printed]:
        """The distinct sections that show the row's error, in reading order."""
        seen, found = set(), []
        for place in self.places:
            if (place.page, place.heading.anchor) not in seen:
                seen.add((place.page, place.heading.anchor))
                found.append(place)
        return found


def headings(text: str, toc_options: Mapping | None = None) -> list[Heading]:
    """A page's headings, outside code, with the ids Python-Markdown's `toc` gives them.

    Only the heading lines are converted, in order, so `toc` makes the same ids (an explicit
    `{ #id }` kept, repeated titles numbered) without rendering the whole page.
    """
    import markdown
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").parse(text)
    found = [
        (token.map[0] + 1, int(token.tag[1:]), tokens[i + 1].content)
        for i, token in enumerate(tokens)
        if token.type == "heading_open"
    ]
    md = markdown.Markdown(
        extensions=["toc", "attr_list"],
        extension_configs={"toc": dict(toc_options or {})},
    )
    md.convert("\n\n".join("#" * level + " " + content for _, level, content in found))
    ids: list[str] = []

    def walk(tokens: list[dict]) -> None:
        for token in tokens:
            ids.append(token["id"])
            walk(token["children"])

    walk(md.toc_tokens)
    if len(ids) != len(found):
        raise ErrorIndexError(
            f"found {len(found)} headings but toc gave {len(ids)} ids"
        )
    return [
        Heading(line, level, plain_heading(content), anchor)
        for (line, level, content), anchor in zip(found, ids, strict=True)
    ]


def plain_heading(content: str) -> str:
    content = re.sub(r"\s*\{[^{}]*\}\s*$", "", content)  # attr_list: `{ #id }`
    return re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", content).strip()  # links: their text


def printed_errors(
    page: str,
    blocks: Sequence[outputs.Block],
    ran: Sequence[list[dict]],
    page_headings: Sequence[Heading],
) -> list[Printed]:
    """Every error line the blocks of `page` printed, each under its section's heading."""
    if len(blocks) != len(ran):
        raise ErrorIndexError(
            f"{page}: {len(blocks)} blocks but outputs for {len(ran)}: build again."
        )
    title = next((h.text for h in page_headings if h.level == 1), page)
    found = []
    for block, chunks in zip(blocks, ran, strict=True):
        for chunk in chunks:
            lines = chunk.get("text", "").split("\n")
            for i, line in enumerate(lines):
                match = ERROR.match(line.rstrip())
                if not match:
                    continue
                kind, message = match[1], (match[2] or "").strip()
                if not message:  # `label: TypeError:` and the message below it
                    message = next((s.strip() for s in lines[i + 1 :] if s.strip()), "")
                above = [h for h in page_headings if h.line < block.line]
                if not above:
                    raise ErrorIndexError(
                        f"{block.name} prints `{kind}: {message[:60]}`, but no heading "
                        "comes before the block: the error index links each error to the "
                        "section that shows it. Put the block under a heading."
                    )
                if not message:
                    raise ErrorIndexError(
                        f"{block.name} prints `{kind}:` with no message: "
                        "the error index has nothing to show a reader who searches."
                    )
                found.append(Printed(page, title, block.name, kind, message, above[-1]))
    return found


def without_runner_names(message: str) -> str:
    """The message without the sentence that names where the code ran."""
    match = RUNNER_NAME.search(message)
    if not match:
        return message
    end = message.rfind(". ", 0, match.start())
    return message[: end + 1] if end >= 0 else message[: match.start()].rstrip()


def shown(message: str) -> str:
    """What a row shows of a message: all of it, or its first sentences up to LIMIT."""
    message = without_runner_names(message)
    if len(message) <= LIMIT:
        return message
    head = message[:LIMIT]
    end = head.rfind(". ")
    if end >= LIMIT // 4:
        return head[: end + 1] + " …"
    return head[: head.rfind(" ")] + " …"


def key(kind: str, message: str) -> tuple[str, str]:
    """What two printings of one error share: the message with its values masked."""
    text = without_runner_names(message)
    text = re.sub(r"\s*(?:\.\.\.|…)$", "", text)  # a page that printed only the start
    text = re.sub(r"\b[a-z]+\d*\[[^\]]*\]", "T", text)  # array types: float32[8,4]
    text = re.sub(r"(the function )'[^']*'", r"\1F", text)  # the reader's function
    while (masked := re.sub(r"\([^()]*\)", "V", text)) != text:  # specs, tuples, meshes
        text = masked
    return kind, re.sub(r"\d+", "N", text)


def rows(
    results: Mapping[str, outputs.PageResult],
    order: Sequence[str],
    toc_options: Mapping | None = None,
    docs: Path = outputs.DOCS,
) -> list[Row]:
    """The index's rows: every error the pages printed, by class and then message.

    `results` are the pages' outputs (`outputs.ensure`), by path relative to `docs`; `order`
    is the reading order of the navigation, which decides whose printed text a row shows and
    the order of its links.
    """
    position = {page: i for i, page in enumerate(order)}
    by_key: dict[tuple[str, str], Row] = {}
    for page in sorted(results, key=lambda p: (position.get(p, len(position)), p)):
        path = docs / page
        found = printed_errors(
            page,
            outputs.page_blocks(path),
            results[page].blocks,
            headings(path.read_text(encoding="utf-8"), toc_options),
        )
        for printed in found:
            text = shown(printed.message)
            if PER_RUN.search(text):
                raise ErrorIndexError(
                    f"{printed.block} prints `{printed.type}: {text}`, which holds a value "
                    "that differs from run to run (an address, a temporary path): a "
                    "reader's message would never match it. Print a message without it."
                )
            row = by_key.setdefault(
                key(printed.type, printed.message), Row(printed.type, text)
            )
            row.places.append(printed)
    return sorted(by_key.values(), key=lambda r: (r.type, r.text.casefold()))


def code_span(text: str) -> str:
    """`text` as inline code, whatever backticks it holds."""
    ticks = "`" * (1 + max(map(len, re.findall("`+", text)), default=0))
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def tables(found: Sequence[Row], page: str) -> str:
    """Markdown for the index on `page`: a heading per exception class, then its rows."""
    here = posixpath.dirname(page)
    parts = []
    for kind in sorted({row.type for row in found}):
        lines = [
            f"## `{kind}`",
            "",
            "| Message (its first line, as printed) | Shown and fixed in |",
            "|---|---|",
        ]
        for row in found:
            if row.type != kind:
                continue
            # each link a target of at least 24 px (WCAG 2.5.8; extra.css), stacked
            links = " <br> ".join(
                f"[{link_text(p)}]"
                f"({posixpath.relpath(p.page, here)}#{p.heading.anchor})"
                "{ .index-link }"
                for p in row.sections()
            )
            # A pipe inside inline code does not end the cell (Python-Markdown's tables).
            lines.append(f"| {code_span(row.text)} | {links} |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def link_text(place: Printed) -> str:
    if place.heading.level == 1:
        return place.title
    return f"{place.title} \N{SINGLE RIGHT-POINTING ANGLE QUOTATION MARK} {place.heading.text}"


def fill(
    markdown: str,
    page: str,
    results: Mapping[str, outputs.PageResult],
    order: Sequence[str],
    toc_options: Mapping | None = None,
    docs: Path = outputs.DOCS,
) -> str:
    """Replace the index's marker in a page's Markdown, if it has one."""
    if MARKER not in markdown:
        return markdown
    try:
        table = tables(rows(results, order, toc_options, docs), page)
    except ErrorIndexError as err:
        raise ErrorIndexError(f"{page}: {MARKER}: {err}") from None
    return markdown.replace(MARKER, table)


def reading_order(mkdocs_yml: Path = outputs.ROOT / "mkdocs.yml") -> list[str]:
    """The pages of the navigation in mkdocs.yml, in order (the build takes MkDocs' own)."""
    text = mkdocs_yml.read_text(encoding="utf-8")
    nav = text[text.index("\nnav:") :]
    return re.findall(r"^\s*-\s+(?:[^:\n]+:\s+)?([\w./-]+\.md)\s*$", nav, re.MULTILINE)
