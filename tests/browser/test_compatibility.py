"""The compatibility matrix in Chromium, at a laptop's 1366 px and a phone's 390 px, in the light
and the dark scheme: the row names stay in view while a table scrolls (with its cue), a
message opens by keyboard and by click, every state reads in colour, icon and word at 4.5:1,
no text is under 11 px, and axe finds nothing, the folds open."""

from __future__ import annotations

from pathlib import Path

import pytest

from docs_build.versions import pages

from .test_site import contrast, scheme_of, visit

PATH = "guides/compatibility/"
SCROLLER = ".version-matrix .md-typeset__scrollwrap"

# Each table's scroller: does it scroll, does it show the cue (extra.css: four gradients, two of
# them scrolling with the content), is it reachable by keyboard and named; then, scrolled to its
# end, where its row names are against its left edge and what the page shows at their middle
# (of the rows in the window, below the site's header bar).
STICKY = r"""(scroller) => {
  scroller.scrollIntoView({block: "start"});
  const style = getComputedStyle(scroller);
  const cue = {
    gradients: (style.backgroundImage.match(/gradient\(/g) || []).length,
    local: style.backgroundAttachment.split(", ").filter((a) => a === "local").length,
    tabindex: scroller.getAttribute("tabindex"),
    name: scroller.getAttribute("aria-label"),
  };
  const scrolls = scroller.scrollWidth > scroller.clientWidth + 1;
  scroller.scrollLeft = scroller.scrollWidth;
  const edge = scroller.getBoundingClientRect().left;
  const top = document.querySelector(".md-header").getBoundingClientRect().bottom;
  const inView = (th) => {
    const box = th.getBoundingClientRect();
    return box.top > top && box.bottom < innerHeight;
  };
  const rows = [...scroller.querySelectorAll("tbody th[scope=row]")].filter(inView).map((th) => {
    const box = th.getBoundingClientRect();
    const seen = document.elementFromPoint(box.left + 4, box.top + box.height / 2);
    return {offset: Math.round(box.left - edge), on_top: th.contains(seen)};
  });
  const scrolled = scroller.scrollLeft;
  scroller.scrollLeft = 0;
  return {scrolls, scrolled, cue, rows};
}"""

# The size of every piece of text a reader can see in the elements given (a locator's, by
# evaluate_all), every fold in them open: here the matrix and its key.
TEXT_SIZES = r"""(roots) => {
  for (const root of roots) for (const fold of root.querySelectorAll("details")) fold.open = true;
  const sizes = [];
  for (const root of roots) {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let node; (node = walker.nextNode()); ) {
      const el = node.parentElement;
      if (!node.data.trim() || el.closest(".a11y-hidden") || !el.getClientRects().length) continue;
      sizes.push([parseFloat(getComputedStyle(el).fontSize), node.data.trim().slice(0, 30)]);
    }
  }
  return sizes;
}"""

# Text and ground of each state's cell, the ground being the cell's own.
STATE_COLOURS = r"""() => Object.fromEntries(["runs", "warns", "raises"].map((state) => {
  const cell = document.querySelector(`.version-matrix td.vm-${state}`);
  const style = getComputedStyle(cell);
  return [state, [style.color, style.backgroundColor]];
}))"""

AXE_RUN = """async () => (await axe.run(document, {resultTypes: ["violations"]}))
    .violations.map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.length,
                           target: v.nodes[0].target.join(' ')}))"""


# Every push: the desktop in light and the phone in dark; daily: the other two.
VIEWS = [
    pytest.param((1366, "light"), id="1366px-light"),
    pytest.param((390, "dark"), id="390px-dark"),
    pytest.param((1366, "dark"), id="1366px-dark", marks=pytest.mark.daily),
    pytest.param((390, "light"), id="390px-light", marks=pytest.mark.daily),
]


@pytest.fixture(params=VIEWS)
def view(request):
    return request.param


@pytest.fixture
def width(view):
    return view[0]


@pytest.fixture
def matrix_page(view, browser, base_url):
    width, scheme = view
    context = browser.new_context(
        viewport={"width": width, "height": 900 if width > 1000 else 844},
        color_scheme=scheme,
    )
    page, seen = visit(context, base_url + PATH, wait="load")
    page.wait_for_timeout(300)  # Material wraps the tables; a11y.js names what scrolls
    assert scheme_of(page) == {"light": "default", "dark": "slate"}[scheme]
    yield page
    assert seen.foreign == seen.failed == seen.console_errors == []
    context.close()


def test_the_row_names_stay_in_view_while_a_table_scrolls(matrix_page, width):
    scrollers = matrix_page.locator(SCROLLER)
    assert scrollers.count() == 3
    for i in range(3):
        found = scrollers.nth(i).evaluate(STICKY)
        if width == 390:
            assert found["scrolls"], i
        if not found["scrolls"]:
            continue
        assert found["scrolled"] > 0
        assert found["cue"]["gradients"] >= 4 and found["cue"]["local"] >= 2, found
        assert found["cue"]["tabindex"] == "0" and found["cue"]["name"], found
        assert found["rows"], i
        for row in found["rows"]:
            assert row == {"offset": 0, "on_top": True}, (i, found["rows"])


def test_a_message_opens_by_keyboard_and_by_click(matrix_page):
    page = matrix_page
    scroller = page.locator(SCROLLER).first
    fold = scroller.locator("details").first
    message = fold.locator(".vm-message")
    assert not message.is_visible()
    # Tab from the table's scroller reaches the first fold's label; Enter opens it.
    scroller.focus()
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.tagName") == "SUMMARY"
    assert fold.locator("summary").evaluate("s => s === document.activeElement")
    page.keyboard.press("Enter")
    assert fold.evaluate("d => d.open")
    assert message.is_visible()
    said, _, text = message.inner_text().partition(": ")
    assert said.endswith(("Error", "Warning")) and text, said  # `TypeError: ...`
    page.keyboard.press("Enter")
    assert not fold.evaluate("d => d.open")
    # A click (a tap) opens another, in the newest release's column.
    other = page.locator(".version-matrix tbody td:nth-child(2) details").first
    other.locator("summary").click()
    assert other.evaluate("d => d.open")
    assert other.locator(".vm-message").is_visible()


def test_states_read_in_colour_icon_and_word_at_enough_contrast(matrix_page):
    colours = matrix_page.evaluate(STATE_COLOURS)
    assert len({ground for _, ground in colours.values()}) == 3  # the colours differ
    for state, (text, ground) in colours.items():
        assert contrast(text, ground) >= 4.5, (state, text, ground)
        cell = matrix_page.locator(f".version-matrix td.vm-{state}").first
        assert pages.STATES[state][0] in cell.inner_text()
    chips = matrix_page.locator(".vm-chip")
    assert [c.strip() for c in chips.all_inner_texts()] == [
        f"{icon} {word}" for icon, word in list(pages.STATES.values())[:3]
    ]


def test_no_text_in_the_matrix_is_under_11_px(matrix_page):
    sizes = matrix_page.locator(".version-matrix, .vm-chip").evaluate_all(TEXT_SIZES)
    assert len(sizes) > 1000
    small = [s for s in sizes if s[0] < 11]
    assert small == []


def test_axe_finds_nothing_with_the_folds_open(matrix_page, axe_script: Path):
    matrix_page.evaluate(
        "() => document.querySelectorAll('.version-matrix details')"
        ".forEach((d) => { d.open = true; })"
    )
    matrix_page.add_script_tag(path=str(axe_script))
    assert matrix_page.evaluate(AXE_RUN) == []
