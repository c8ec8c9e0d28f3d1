"""The built site in a real browser: every page loads only from the local server, without
console errors; search, copy buttons and the colour toggle work; diagrams render; axe-core
finds no accessibility violation of any impact, in the light scheme or the dark one (each
page's counts go to axe.txt among the artifacts)."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import pytest

from docs_build import notebooks, outputs
from tests.site_search import pages_found

from .conftest import ARTIFACTS, ROOT, serve


def site_pages() -> list[str]:
    """Every page of the site, as a path relative to its root (from the nav in mkdocs.yml)."""
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = text[text.index("\nnav:") :]
    pages = re.findall(r"([\w/-]+)\.md\s*$", nav, re.MULTILINE)
    return ["" if p == "index" else p.removesuffix("/index") + "/" for p in pages]


def source_of(path: str) -> Path:
    """The Markdown file a site path comes from (`x/y/` is x/y.md or x/y/index.md)."""
    plain = ROOT / "docs" / f"{path.rstrip('/')}.md"
    return plain if plain.exists() else ROOT / "docs" / path / "index.md"


# Every page with code (guides and exercises) is also a notebook page, but for a page whose
# code needs the repository (docs_build.notebooks.needs_the_repository).
NOTEBOOK_PAGES = [
    "notebooks/" + p
    for p in site_pages()
    if p
    and (blocks := outputs.page_blocks(source_of(p)))
    and not notebooks.needs_the_repository(blocks)
]
PAGES = site_pages() + NOTEBOOK_PAGES
# Visited on every push: one page of each kind the site builds (home, diagrams, a guide with
# folded setup and TPU tables, the two tools, a notebook page); every page, in both schemes,
# once a day (`daily`).
EVERY_PUSH = {
    "",
    "basics/named-sharding/",
    "training/fsdp/",
    "tools/sharding-explorer/",
    "tools/strategy-planner/",
    "notebooks/training/fsdp/",
}


@dataclass
class Visit:
    """What a browser did while it showed one page."""

    foreign: list[str] = field(
        default_factory=list
    )  # requests to any other host (blocked)
    failed: list[str] = field(default_factory=list)  # local requests that failed
    console_errors: list[str] = field(default_factory=list)


def visit(context, url: str, wait: str = "networkidle") -> tuple[object, Visit]:
    """Open `url`, blocking and recording every request that leaves its host.

    The recording goes on after it returns: a caller may do more (run axe) before reading it.
    """
    host = urlparse(url).netloc
    seen = Visit()
    page = context.new_page()

    def route(r):
        if urlparse(r.request.url).netloc == host or r.request.url.startswith("data:"):
            r.continue_()
        else:
            seen.foreign.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.on(
        "requestfailed",
        lambda req: urlparse(req.url).netloc == host and seen.failed.append(req.url),
    )
    page.on(
        "response",
        lambda res: res.status >= 400 and seen.failed.append(f"{res.status} {res.url}"),
    )
    page.on(
        "console", lambda m: m.type == "error" and seen.console_errors.append(m.text)
    )
    page.on("pageerror", lambda err: seen.console_errors.append(str(err)))
    page.goto(url, wait_until=wait)
    return page, seen


def test_the_checker_catches_a_page_that_asks_another_host(context, tmp_path):
    (tmp_path / "index.html").write_text(
        '<!doctype html><title>t</title><img src="https://cdn.example.com/logo.png" alt="">'
        '<link rel="stylesheet" href="https://fonts.googleapis.com/css?family=Roboto">',
        encoding="utf-8",
    )
    server = serve(tmp_path)
    try:
        _, seen = visit(context, f"http://127.0.0.1:{server.server_address[1]}/")
    finally:
        server.shutdown()
    assert sorted(seen.foreign) == [
        "https://cdn.example.com/logo.png",
        "https://fonts.googleapis.com/css?family=Roboto",
    ]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("psum", "concepts/collectives/"),
        ("PartitionSpec", "basics/partition-spec/"),
        ("FSDP", "training/fsdp/"),
        # Words of an error message, which only the error index has (printed outputs are
        # left out of the search index).
        ("resolved unambiguously", "guides/error-index/"),
    ],
)
def test_search_finds_the_page(context, base_url, query, expected):
    page, _ = visit(context, base_url)
    # The theme searches on key presses, so type rather than fill.
    page.locator("input.md-search__input").press_sequentially(query, delay=20)
    page.wait_for_selector(".md-search-result__item a", timeout=15_000)
    links = page.eval_on_selector_all(
        ".md-search-result__item a", "els => els.map(e => e.getAttribute('href'))"
    )
    targets = {urlparse(link).path.lstrip("./").split("#")[0] for link in links}
    assert expected in targets, links


def test_search_box_counts_the_pages_the_index_test_finds(context, base_url, site):
    """A name from code typed into the search box: the theme finds as many pages as
    tests/site_search.py works out from the index (tests/test_site_search.py holds that
    these are every page showing the name), and lists only those."""
    index = json.loads((site / "search" / "search_index.json").read_text("utf-8"))
    expected = pages_found(index, "reshard")
    assert len(expected) >= 10
    page, _ = visit(context, base_url)
    page.locator("input.md-search__input").press_sequentially("reshard", delay=20)
    meta = page.locator(".md-search-result__meta")
    # The count replaces "Type to start searching" once the worker has answered.
    page.wait_for_function(
        "el => /\\d+ matching/.test(el.textContent)",
        arg=meta.element_handle(),
        timeout=15_000,
    )
    assert meta.inner_text() == f"{len(expected)} matching documents"
    links = page.eval_on_selector_all(
        ".md-search-result__item > a", "els => els.map(e => e.getAttribute('href'))"
    )
    shown = {urlparse(link).path.lstrip("./").split("#")[0] for link in links}
    assert shown and shown <= expected, shown - expected


# A guide page, and a notebook page: its cells are the theme's code blocks, with its button.
@pytest.mark.parametrize(
    "path", ["basics/devices-and-meshes/", "notebooks/basics/devices-and-meshes/"]
)
def test_copy_button_puts_the_code_on_the_clipboard(context, base_url, path):
    page, _ = visit(context, base_url + path)
    block = page.locator("div.highlight").first
    code = block.locator("pre code").inner_text()
    block.hover()
    block.locator("button.md-code__button[data-md-type='copy']").click()
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.strip() == code.strip()
    assert 'jax.config.update("jax_num_cpu_devices", 8)' in copied


def test_a_code_block_gets_its_copy_button_when_it_scrolls_into_view(context, base_url):
    """The theme mounts a code block (its copy button, annotations and keyboard focus) when
    it first comes into view, not every block at load (mkdocs.yml's content.lazy): the last
    block of a long page has no button until it is scrolled to, and then it copies."""
    page, _ = visit(context, base_url + "training/fsdp/")
    last = page.locator("div.highlight:not(.no-copy):visible").last
    button = last.locator("button.md-code__button[data-md-type='copy']")
    assert button.count() == 0
    assert page.locator("button.md-code__button").count() >= 1  # the first screen's
    last.scroll_into_view_if_needed()
    button.wait_for(state="attached", timeout=5_000)
    last.hover()
    button.click()
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.strip() == last.locator("pre code").inner_text().strip()


def relative_luminance(css_colour: str) -> float:
    r, g, b = (int(v) / 255 for v in re.findall(r"[\d.]+", css_colour)[:3])
    r, g, b = (
        c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)
    )
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    high, low = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_colour_toggle_keeps_diagrams_readable_in_both_schemes(context, base_url):
    page, _ = visit(context, base_url + "basics/named-sharding/")
    diagram = page.locator(".sharding-diagram").first
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for scheme, toggle in (("default", "__palette_1"), ("slate", "__palette_0")):
        scheme_now = page.evaluate("document.body.getAttribute('data-md-color-scheme')")
        assert scheme_now == scheme
        diagram.scroll_into_view_if_needed()
        diagram.screenshot(path=str(ARTIFACTS / f"diagram-{scheme}.png"))
        # Uncoloured text in a drawing against the page; cell labels against their cells.
        text = page.evaluate(
            "getComputedStyle(document.querySelector('.rich-svg')).color"
        )
        ground = page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert contrast(text, ground) >= 4.5, (scheme, text, ground)
        for label, cell in cell_colours(diagram.inner_html()):
            assert contrast(label, cell) >= 3.0, (scheme, label, cell)
        page.click(f"label[for='{toggle}']")
    assert (
        page.evaluate("document.body.getAttribute('data-md-color-scheme')") == "default"
    )
    assert (ARTIFACTS / "diagram-slate.png").stat().st_size > 1000


def cell_colours(svg: str) -> list[tuple[str, str]]:
    """(label colour, cell colour) pairs of a rich SVG: each text over the rect under it."""
    styles = dict(re.findall(r"\.(\S+-r\d+) \{ fill: (#[0-9a-f]{6})", svg))
    rects = [
        (float(x), float(y), float(w), fill)
        for fill, x, y, w in re.findall(
            r'<rect fill="(#[0-9a-f]{6})" x="([\d.]+)" y="([\d.]+)" width="([\d.]+)"',
            svg,
        )
    ]
    pairs = []
    for cls, x, y in re.findall(r'<text class="(\S+)" x="([\d.]+)" y="([\d.]+)"', svg):
        under = [
            f for rx, ry, rw, f in rects if rx <= float(x) < rx + rw and ry < float(y)
        ]
        if cls in styles and under:
            pairs.append((hex_to_css(styles[cls]), hex_to_css(under[-1])))
    return pairs


def hex_to_css(colour: str) -> str:
    return "rgb({}, {}, {})".format(*(int(colour[i : i + 2], 16) for i in (1, 3, 5)))


def test_diagrams_render_as_svg_with_device_labels(context, base_url):
    page, _ = visit(context, base_url + "basics/named-sharding/")
    diagrams = page.locator("svg.rich-svg")
    assert diagrams.count() >= 8
    for i in range(diagrams.count()):
        box = diagrams.nth(i).bounding_box()
        assert box and box["width"] > 50 and box["height"] > 10
        assert re.search(
            r"CPU\s\d", diagrams.nth(i).text_content().replace("\xa0", " ")
        )


@pytest.fixture(scope="module")
def axe_report():
    """Every page's axe findings, by impact: this process's share, merged into axe.txt at
    the end of the run (conftest.py), whichever worker checked which page."""
    report: dict[tuple[str, str], dict[str, int]] = {}
    yield report
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    rows = [[page, scheme, counts] for (page, scheme), counts in report.items()]
    part = ARTIFACTS / f"axe.{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.json"
    part.write_text(json.dumps(rows), encoding="utf-8")


@pytest.fixture(scope="session")
def light_context(browser):
    """One browser context shared by the pages a worker visits: a page then takes the theme's
    scripts and styles from the browser's cache, as a reader's second page does."""
    context = browser.new_context(
        viewport={"width": 1280, "height": 900}, color_scheme="light"
    )
    yield context
    context.close()


AXE_RUN = """async (options) => (await axe.run(document, options))
    .violations.map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.length,
                           target: v.nodes[0].target.join(' ')}))"""
# Every rule in the light scheme; in the dark one, the rules a palette can change. The schemes
# differ only in colours (the next test holds the site's CSS to that), so the other rules
# would find in the dark what they found in the light, at twice the time per page.
AXE_OPTIONS = {
    "light": {"resultTypes": ["violations"]},
    "dark": {
        "resultTypes": ["violations"],
        "runOnly": {"type": "rule", "values": ["color-contrast", "link-in-text-block"]},
    },
}


@pytest.mark.parametrize("width", [1280, 390])
def test_the_error_index_links_are_targets_of_24_px(
    browser, base_url, axe_script, width
):
    """Its table cells stack several links, one per line: axe's target-size rule (WCAG
    2.5.8, which Lighthouse runs) finds each at least 24 px or spaced from the next."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    page, _ = visit(context, base_url + "guides/error-index/", wait="load")
    page.add_script_tag(path=str(axe_script))
    options = {"runOnly": {"type": "rule", "values": ["target-size"]}}
    found = page.evaluate(AXE_RUN, options)
    stacked = page.locator("td a.index-link + br + a.index-link").count()
    context.close()
    assert stacked > 10
    assert found == []


def test_the_schemes_differ_only_in_colours():
    """The premise of the dark scheme's shorter axe run: a rule scoped to a scheme sets
    custom properties (colours) and nothing that could hide, show or move an element."""
    css = (ROOT / "docs" / "stylesheets" / "extra.css").read_text(encoding="utf-8")
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    scoped = re.findall(r"\[data-md-color-scheme[^{]*\{([^}]*)\}", css)
    assert scoped
    for body in scoped:
        for declaration in filter(None, (d.strip() for d in body.split(";"))):
            assert declaration.startswith("--"), declaration
    assert not re.search(r"only-(light|dark)", css)


def scheme_of(page) -> str:
    return page.evaluate("document.body.dataset.mdColorScheme")


def test_the_scheme_follows_the_system_then_the_readers_choice(browser, base_url):
    """The palette form is the site's (docs/overrides/partials/palette.html), not the
    theme's component: the system's scheme at first, then the toggle's choice, kept from
    page to page, by click and by Enter, and the phone browser's bar colour set."""
    context = browser.new_context(color_scheme="dark")
    page, seen = visit(context, base_url + "basics/named-sharding/", wait="load")
    assert page.locator("[data-md-component=palette]").count() == 0
    assert scheme_of(page) == "slate"
    toggle = page.locator("form.md-header__option label:not([hidden])")
    assert toggle.count() == 1
    assert toggle.get_attribute("title") == "Switch to light mode"
    toggle.click()
    assert scheme_of(page) == "default"
    assert page.evaluate("__md_get('__palette').index") == 0
    page.goto(base_url + "training/fsdp/", wait_until="load")
    # kept on the next page, whatever the system says
    assert scheme_of(page) == "default"
    toggle = page.locator("form.md-header__option label:not([hidden])")
    assert toggle.get_attribute("title") == "Switch to dark mode"
    page.wait_for_function(
        "/^#[0-9a-f]{6}$/.test(document.querySelector('meta[name=theme-color]').content)"
    )
    page.locator("#__palette_0").focus()
    page.keyboard.press("Enter")
    assert scheme_of(page) == "slate"
    assert page.evaluate("__md_get('__palette').index") == 1
    assert seen.console_errors == []
    context.close()


# One visit per page checks what it loads and what axe finds in both schemes: the light one
# first (every rule), then the dark one (the colour rules: AXE_OPTIONS) through the page's own toggle (the same `slate` palette a reader
# whose system is dark gets: see the test after this one), then the toggle back, so that the
# shared context keeps following the system setting.
def test_the_pages_visited_on_every_push_are_pages_of_the_site():
    assert set(PAGES) >= EVERY_PUSH


@pytest.mark.parametrize(
    "path",
    [p if p in EVERY_PUSH else pytest.param(p, marks=pytest.mark.daily) for p in PAGES],
)
def test_page_loads_locally_without_errors_and_passes_axe_in_both_schemes(
    light_context, base_url, axe_script: Path, axe_report, path
):
    # Not "networkidle", which idles half a second on every visit: axe runs from `load`, and
    # what the page requests meanwhile (the search index, say) is recorded all the same.
    page, seen = visit(light_context, base_url + path, wait="load")
    page.add_script_tag(path=str(axe_script))
    violations = {}
    for scheme, expected, toggle in (
        ("light", "default", "__palette_1"),
        ("dark", "slate", "__palette_0"),
    ):
        assert scheme_of(page) == expected
        violations[scheme] = page.evaluate(AXE_RUN, AXE_OPTIONS[scheme])
        page.click(f"label[for='{toggle}']")
    assert scheme_of(page) == "default"
    loaded = page.evaluate("performance.getEntriesByType('resource').map(e => e.name)")
    page.close()
    assert seen.foreign == []
    assert seen.failed == []
    assert seen.console_errors == []
    assert any(url.endswith("search_index.json") for url in loaded), loaded
    for scheme, found in violations.items():
        counts: dict[str, int] = {}
        for v in found:
            counts[v["impact"]] = counts.get(v["impact"], 0) + v["nodes"]
        axe_report[path, scheme] = counts
    assert violations == {"light": [], "dark": []}  # of any impact, minor included


def test_links_in_small_print_keep_their_contrast_in_both_schemes(
    context, base_url, axe_script: Path
):
    """A caption's small print with links in it (the sources under the overlap page's cost
    tables): the theme faded small print with opacity, links included, to 3.8:1 on white,
    which Lighthouse's mobile run found; the daily axe run of every page finds it too, this
    checks it on every push."""
    page, _ = visit(context, base_url + "advanced/overlap/", wait="load")
    assert page.locator(".md-typeset small a").count() >= 2
    page.add_script_tag(path=str(axe_script))
    found = {}
    for scheme, toggle in (("default", "__palette_1"), ("slate", "__palette_0")):
        assert scheme_of(page) == scheme
        found[scheme] = page.evaluate(SMALL_PRINT_CONTRAST)
        page.click(f"label[for='{toggle}']")
    page.close()
    assert found == {"default": [], "slate": []}


SMALL_PRINT_CONTRAST = """async () => (await axe.run(
    {include: [".md-typeset small"]},
    {resultTypes: ["violations"], runOnly: {type: "rule", values: ["color-contrast"]}}
)).violations.flatMap(v => v.nodes.map(n => n.target.join(" ")))"""


def test_a_reader_whose_system_is_dark_gets_the_dark_scheme(browser, base_url):
    context = browser.new_context(color_scheme="dark")
    page, seen = visit(context, base_url + "basics/named-sharding/")
    assert scheme_of(page) == "slate"
    context.close()
    assert seen.foreign == seen.failed == seen.console_errors == []
