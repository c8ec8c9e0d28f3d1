"""The home page's path (docs/index.md, filled by docs_build/home.py): its cards follow the
navigation's sections in mkdocs.yml, each links its section's first page, and each time is
the one computed from the section's pages at the rates the page states."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import pytest

import docs_build.built_site
from docs_build import home

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
# Not steps of the path: the home page itself, and the reference pages a reader looks up
# when needed (listed under "All pages").
NOT_ON_THE_PATH = {"Home", "Reference"}


def nav_sections() -> list[tuple[str, list[str]]]:
    """mkdocs.yml's top-level navigation: each section's title and pages, in order (read
    here with a pattern, not through MkDocs, which the build uses)."""
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    sections: list[tuple[str, list[str]]] = []
    for line in text[text.index("\nnav:") :].splitlines()[1:]:
        if m := re.fullmatch(r"  - ([^:]+):\s*(\S*)", line):
            sections.append((m[1], [m[2]] if m[2] else []))
        elif m := re.fullmatch(r"\s{4,}- ([\w/.-]+\.md)", line):
            sections[-1][1].append(m[1])
    return sections


def url(page: str) -> str:
    """Where the built site serves a page of docs/ (`a/index.md` at `a/`)."""
    stem = page.removesuffix(".md")
    return (
        "" if stem == "index" else re.sub(r"(^|/)index$", r"\1", stem).rstrip("/") + "/"
    )


def cards(html: str) -> list[tuple[str, str, str]]:
    """The path's cards on the built home page: title, link and the time shown."""
    path = re.search(r'<div class="grid cards home-path">(.*?)</div>', html, re.S)
    assert path, "no path on the home page"
    found = re.findall(
        r'<li>\s*<p><strong><a href="([^"]+)">(.*?)</a></strong>\s*'
        r'<span class="home-time">(.*?)</span>',
        path[1],
        re.S,
    )
    return [(unescape(title), href, unescape(time)) for href, title, time in found]


@pytest.fixture(scope="module")
def built_site() -> Path:
    # The strict build of this tree, shared with the other tests (docs_build/built_site.py).
    return docs_build.built_site.built_site()


@pytest.fixture(scope="module")
def home_html(built_site) -> str:
    return (built_site / "index.html").read_text(encoding="utf-8")


def test_the_path_is_the_navigation_s_sections_in_order(home_html):
    on_path = [name for name, _ in nav_sections() if name not in NOT_ON_THE_PATH]
    assert len(on_path) == 7
    assert [title for title, _, _ in cards(home_html)] == on_path


def test_each_card_links_the_first_page_of_its_section(built_site, home_html):
    first = {name: pages[0] for name, pages in nav_sections()}
    for title, href, _ in cards(home_html):
        assert href == url(first[title]), (title, href)
        assert (built_site / href / "index.html").is_file(), href


def test_each_time_is_the_one_computed_from_its_section_s_pages(home_html):
    pages = dict(nav_sections())
    shown = {title: time for title, _, time in cards(home_html)}
    assert shown == {
        title: home.duration(home.minutes([DOCS / p for p in pages[title]]))
        for title in shown
    }
    assert all(re.fullmatch(r"(\d+ h)?( ?\d+ min)?", t) for t in shown.values())
    text = " ".join(unescape(re.sub(r"<[^>]+>", " ", home_html)).split())
    rates = (
        f"at {home.WORDS_PER_MINUTE} words of prose and "
        f"{home.CODE_LINES_PER_MINUTE} lines of code a minute"
    )
    assert rates in text


def test_the_all_pages_list_links_every_page_of_the_navigation(home_html):
    listed = home_html[home_html.index('id="all-pages"') :]
    links = re.findall(r'<a href="([^"#]+)"', listed)
    expected = [
        url(p) for name, pages in nav_sections() if name != "Home" for p in pages
    ]
    assert [link for link in links if not link.startswith("http")][
        : len(expected)
    ] == expected


def test_the_home_page_stays_under_200_kb(built_site):
    assert (built_site / "index.html").stat().st_size < 200_000


PAGE = """# A page

Two [linked](other.md#here) words, `code` <span>too</span>.

```{.python}
--8<-- "snippets/cpu_devices.py:setup"
x = 1

```

??? note "Setup: helpers"

    ```{.python}
    hidden = 1
    ```

    Folded words are not read.

| a b | c |
|-----|---|
| d   | e |
"""


def test_counts_are_the_words_of_prose_and_the_lines_of_code_outside_folds(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(PAGE, encoding="utf-8")
    # words: "A page" 2, "Two linked words code too" 5, the table's "a b c d e" 5;
    # code: the setup's 3 lines and `x = 1`, not the blank lines nor the fold
    assert home.counts(page) == home.Counts(words=12, code_lines=4)
    assert home.Counts(words=200, code_lines=10).minutes == 2.0


def test_times_round_up_to_five_minutes_and_read_as_hours_and_minutes(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n" + "word " * 1001 + "\n", encoding="utf-8")
    assert home.minutes([page]) == 10  # 1003 words: 5.015 minutes
    assert [home.duration(m) for m in (5, 60, 65, 125)] == [
        "5 min",
        "1 h",
        "1 h 5 min",
        "2 h 5 min",
    ]


def test_a_marker_naming_no_section_stops_the_build():
    with pytest.raises(home.HomeError, match="names no section"):
        home.fill("<!-- home: time Nowhere -->", [("Foundations", [])])


# The sections a learner reads before "Beyond the basics": every page among them draws at
# least one figure from its own arrays or programs (issue 30 §2), each an <svg role="img">
# with its text alternative.
DRAWN_SECTIONS = (
    "Foundations",
    "Three ways to shard",
    "Training across devices",
    "Choosing a strategy",
)


def test_every_page_on_the_learners_path_draws_a_figure(built_site):
    pages = [
        p for name, pages in nav_sections() if name in DRAWN_SECTIONS for p in pages
    ]
    assert len(pages) >= 20
    bare = []
    for page in pages:
        html = (built_site / url(page) / "index.html").read_text(encoding="utf-8")
        figures = re.findall(
            r'<svg [^>]*role="img"[^>]*aria-label(?:ledby)?="[^"]+"', html
        )
        if not figures:
            bare.append(page)
    assert bare == [], f"no drawn figure on {bare}"
