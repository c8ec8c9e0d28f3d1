"""No build talk in what a reader reads: outside code blocks and the "How this was measured"
folds, no page of the built site names the build's files (`docs_build/`, `tests/`), a nox
session (`nox -s ...`) or a libtpu version. Those belong in the folds, which stay closed."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from docs_build.built_site import built_site

TALK = re.compile(r"docs_build/|\btests/|\bnox -s\b|\blibtpu \d")
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
        "source", "track", "wbr"}  # fmt: skip


class ReaderText(HTMLParser):
    """The text of a page's article, less code blocks, scripts and `details.measured`."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.open: list[tuple[str, bool, bool]] = []
        self.hidden = 0
        self.article = 0
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in VOID:
            return
        classes = (dict(attrs).get("class") or "").split()
        hidden = tag in ("pre", "script", "style") or (
            tag == "details" and "measured" in classes
        )
        self.open.append((tag, hidden, tag == "article"))
        self.hidden += hidden
        self.article += tag == "article"

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        while self.open:
            name, hidden, article = self.open.pop()
            self.hidden -= hidden
            self.article -= article
            if name == tag:
                break

    def handle_data(self, data):
        if self.article and not self.hidden:
            self.text.append(data)


def build_talk(html: str) -> list[str]:
    """Each mention of the build in a page's reader text, with a little context."""
    reader = ReaderText()
    reader.feed(html)
    text = " ".join(" ".join(reader.text).split())
    return [text[max(0, m.start() - 50) : m.end() + 30] for m in TALK.finditer(text)]


def test_the_reader_text_drops_code_and_measured_folds_only():
    page = (
        "<article><p>Compiled by <code>nox -s tpu</code>.</p>"
        "<pre><code>nox -s check</code></pre>"
        '<details class="measured"><summary>How</summary><p>docs_build/x.py</p></details>'
        '<details class="note"><summary>Setup</summary><p>libtpu 0.0.50.1</p></details>'
        "</article><footer>tests/x.py</footer>"
    )
    found = build_talk(page)
    assert len(found) == 2
    assert "nox -s tpu" in found[0] and "libtpu 0.0.50.1" in found[1]
    assert not any("docs_build/" in f or "tests/" in f or "check" in f for f in found)


@pytest.fixture(scope="module")
def site():
    return built_site()


def test_no_page_names_the_build_outside_code_and_measured_folds(site):
    found = {
        str(page.relative_to(site)): talk
        for page in sorted(site.rglob("*.html"))
        if (talk := build_talk(page.read_text(encoding="utf-8")))
    }
    assert not found, found


def test_generated_tables_fold_how_they_were_measured(site):
    page = (site / "training" / "scaling" / "index.html").read_text(encoding="utf-8")
    folds = re.findall(
        r'<details class="measured"[^>]*>\s*<summary>(.*?)</summary>', page
    )
    assert folds and set(folds) == {"How this was measured"}
    # The versions and files are still there for whoever opens the fold.
    assert "libtpu 0." in page and "docs_build/costmodel.py" in page
