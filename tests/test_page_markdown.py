"""The pages' Markdown says what its author meant: no wrapped line starts a list by accident."""

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md"))
ITEM = re.compile(r"^(\s*)(\d+[.)]|[-*+])\s")


def accidental_list_items(text: str) -> list[str]:
    """Lines that Markdown reads as a new list item although they continue a sentence.

    A list item is meant when a blank line, an item at the same depth, or the deeper lines of
    the item before it come first. A wrapped line that happens to begin with "7." or "-"
    right after text at its own depth or shallower (inside a code annotation, say) is not:
    Markdown starts a nested list there, and the sentence breaks in two.
    """
    lines = text.splitlines()
    if lines and lines[0] == "---":  # YAML front matter
        end = lines.index("---", 1)
        lines = [""] * (end + 1) + lines[end + 1 :]
    found, fence = [], False
    for i, line in enumerate(lines):
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        item = ITEM.match(line)
        if fence or i == 0 or not item:
            continue
        before = lines[i - 1]
        if not before.strip() or before.lstrip().startswith("|"):
            continue
        depth = len(item.group(1))
        earlier = ITEM.match(before)
        if earlier and len(earlier.group(1)) == depth:
            continue
        if len(before) - len(before.lstrip()) > depth:
            continue
        found.append(f"line {i + 1}: {line.strip()}")
    return found


def test_the_check_finds_a_wrapped_number_and_passes_real_lists():
    annotation = (
        "1.  its position along `x`, a number from 0 to\n    7. On this mesh it is"
    )
    assert accidental_list_items(annotation) == ["line 2: 7. On this mesh it is"]
    real = "1.  one\n    more of one\n2.  two\n\n    3. nested after a blank line\n"
    assert accidental_list_items(real) == []
    assert accidental_list_items("---\nhide:\n  - toc\n---\n\n# Title\n") == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(DOCS)))
def test_no_wrapped_line_starts_a_list(page):
    assert accidental_list_items(page.read_text(encoding="utf-8")) == []
