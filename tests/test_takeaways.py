"""Every guide page ends with a Takeaways box: three bullets, after its last section's content
and before "Where next", in the page and in its notebook."""

import json
import re
from pathlib import Path

import pytest

from docs_build import notebooks, outputs

DOCS = Path(__file__).resolve().parents[1] / "docs"
# The folders of the guide pages. Tools and exercises are not guides; a section's index page
# is a list of links, and a page the build fills from data (`<!-- generated: ... -->`, the
# error index and the compatibility matrix) is a reference table.
GUIDE_FOLDERS = ("basics", "concepts", "training", "advanced", "guides")
BOX = '!!! success "Takeaways"'
WHERE_NEXT = re.compile(r"^## Where next\b", re.MULTILINE)
SITE = "https://example.org/docs/"
REPO = "https://github.com/owner/repo"


def guide_pages() -> list[Path]:
    pages = []
    for folder in GUIDE_FOLDERS:
        for page in sorted((DOCS / folder).glob("*.md")):
            text = page.read_text(encoding="utf-8")
            if page.name != "index.md" and "<!-- generated:" not in text:
                pages.append(page)
    return pages


def takeaways(text: str) -> list[str]:
    """The bullets of the page's one Takeaways box, which must close its last section.

    Raises AssertionError with what is wrong: no box or several, anything but blank lines
    between the box and "## Where next" (or the end of the page), a line in the box that is
    neither a bullet nor its continuation.
    """
    assert text.count(BOX) == 1, f"{text.count(BOX)} Takeaways boxes, not one"
    before, box = text.split(BOX)
    end = WHERE_NEXT.search(box)
    box = box[: end.start()] if end else box
    assert not before.rstrip().endswith(("## Takeaways", "#")), "a heading of its own"
    assert re.search(r"^#{2,} ", before, re.MULTILINE), "no section before the box"
    bullets: list[str] = []
    for line in box.strip("\n").split("\n"):
        if line.startswith("    - "):
            bullets.append(line[6:])
        elif line.startswith("      ") and bullets:
            bullets[-1] += " " + line.strip()
        else:
            assert not line.strip(), f"after the box, before Where next: {line!r}"
    return bullets


def test_the_guide_pages_are_found_not_listed():
    found = {p.relative_to(DOCS).as_posix() for p in guide_pages()}
    assert {
        "basics/partition-spec.md",
        "training/scaling.md",
        "guides/errors.md",
    } <= found
    assert (
        not {"advanced/index.md", "guides/error-index.md", "guides/compatibility.md"}
        & found
    )
    assert len(found) >= 31


@pytest.mark.parametrize(
    "page", guide_pages(), ids=lambda p: p.relative_to(DOCS).as_posix()
)
def test_each_guide_page_ends_with_three_takeaways(page):
    bullets = takeaways(page.read_text(encoding="utf-8"))
    assert len(bullets) == 3, bullets
    for bullet in bullets:
        assert len(bullet.split()) >= 8, f"not a statement: {bullet!r}"


def test_the_check_refuses_a_misplaced_or_short_box():
    ok = f"# P\n\n## A\n\nText.\n\n{BOX}\n\n    - one\n    - two,\n      still two\n    - three\n\n## Where next\n\n- [x](x.md)\n"
    assert takeaways(ok) == ["one", "two, still two", "three"]
    late = ok.replace("    - three\n\n", "    - three\n\nMore text.\n\n")
    with pytest.raises(AssertionError, match="before Where next"):
        takeaways(late)
    with pytest.raises(AssertionError, match="not one"):
        takeaways(ok.replace(BOX, "!!! note"))
    with pytest.raises(AssertionError, match="not one"):
        takeaways(ok + "\n" + BOX + "\n")
    with pytest.raises(AssertionError, match="heading of its own"):
        takeaways(ok.replace(f"\n{BOX}", f"\n## Takeaways\n\n{BOX}"))


def test_the_takeaways_read_as_a_quoted_list_in_the_notebook():
    """Jupyter has no admonitions: the box becomes a quote whose title is bold, and the
    bullets, wrapped lines included, stay one list item each."""
    page = DOCS / "basics" / "devices-and-meshes.md"
    bullets = takeaways(page.read_text(encoding="utf-8"))
    nb = json.loads(notebooks.build(page, SITE, REPO))
    last = "".join(nb["cells"][-1]["source"])
    quote, _ = last.split("\n\n## Where next")
    quote = quote.strip()
    assert quote.endswith(bullets[-1].split()[-1])  # the quote ends, then a blank line
    assert quote.startswith("> **Takeaways**\n>\n> - "), quote
    items = re.split(r"\n> - ", "\n" + quote.split("\n>\n", 1)[1])[1:]
    assert [" ".join(i.replace("\n>", " ").split()) for i in items] == bullets
    assert outputs.page_blocks(page)  # a page with code, so it has a notebook
