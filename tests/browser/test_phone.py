"""The site on a phone (390x844) and on a laptop: printed output keeps its lines, whatever
scrolls sideways says so, the per-device tables follow the colour scheme, and the copy button
never covers code."""

from __future__ import annotations

import pytest

from .test_site import EVERY_PUSH, PAGES, scheme_of, visit

PHONE = {"width": 390, "height": 844}

# In one page, in its current scheme: every line of an output block that is not an
# exception's message (`.output-prose`, docs_build/prose.py) and takes more than one line
# box; every element of the content that scrolls sideways without the cue (the shades of
# extra.css: gradients, two of them scrolling with the content), without keyboard access or
# without a name; and every drawing whose text is drawn under 11 px.
MEASURE = r"""() => {
  const wrapped = [];
  for (const code of document.querySelectorAll(".output pre > code")) {
    const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
    for (let node; (node = walker.nextNode()); ) {
      if (node.parentElement.closest(".output-prose")) continue;
      let start = 0;
      for (const line of node.data.split("\n")) {
        if (line.trim()) {
          const range = document.createRange();
          range.setStart(node, start);
          range.setEnd(node, start + line.length);
          const tops = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
          if (tops.size > 1) wrapped.push(line);
        }
        start += line.length + 1;
      }
    }
  }
  const uncued = [];
  for (const el of document.querySelectorAll(".md-content *:not(span)")) {
    const style = getComputedStyle(el);
    if (!["auto", "scroll"].includes(style.overflowX)) continue;
    if (el.scrollWidth <= el.clientWidth || !el.getClientRects().length) continue;
    // a closed fold's content is not drawn and not in the keyboard's order; once opened, it
    // is measured as any other (test_migration's folds test)
    if (el.closest("details:not([open])")) continue;
    const gradients = (style.backgroundImage.match(/gradient\(/g) || []).length;
    const local = style.backgroundAttachment.split(", ").filter((a) => a === "local").length;
    const problems = [];
    if (gradients < 4 || local < 2) problems.push("no cue");
    if (el.getAttribute("tabindex") !== "0") problems.push("not focusable");
    if (!el.getAttribute("aria-label")) problems.push("no name");
    if (problems.length) {
      uncued.push(`${el.tagName}.${el.className} ${problems.join(", ")}: ` +
                  el.textContent.trim().slice(0, 40));
    }
  }
  // every drawing's smallest text as drawn: its font size times the drawing's scale
  const small = [];
  for (const svg of document.querySelectorAll(".md-content svg[role=img]")) {
    if (!svg.getClientRects().length || svg.closest("details:not([open])")) continue;
    const view = svg.viewBox.baseVal;
    const scale = view && view.width ? svg.getBoundingClientRect().width / view.width : 1;
    for (const text of svg.querySelectorAll("text")) {
      if (!text.textContent.trim()) continue;
      const px = parseFloat(getComputedStyle(text).fontSize) * scale;
      if (px < 10.95) {
        small.push(`${svg.getAttribute("class")}: ${px.toFixed(1)} px ` +
                   text.textContent.trim().slice(0, 30));
        break;
      }
    }
  }
  return {wrapped, uncued, small};
}"""


# Two animation frames: the ResizeObserver callbacks of the frames laid out since load (where
# a11y.js names what scrolls) have run.
SETTLED = (
    "() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))"
)

# Opens every fold of the page.
OPEN_FOLDS = "document.querySelectorAll('details').forEach((d) => { d.open = true; })"


@pytest.fixture(scope="module")
def phone_context(browser):
    # a touch screen, as a phone is: the theme behaves differently where nothing can hover
    context = browser.new_context(
        viewport=PHONE, color_scheme="light", has_touch=True, is_mobile=True
    )
    yield context
    context.close()


@pytest.mark.parametrize(
    "path",
    [p if p in EVERY_PUSH else pytest.param(p, marks=pytest.mark.daily) for p in PAGES],
)
def test_on_a_phone_output_keeps_its_lines_and_what_scrolls_shows_it(
    phone_context, base_url, path
):
    page, _ = visit(phone_context, base_url + path, wait="load")
    page.wait_for_timeout(100)  # a11y.js names what scrolls once the theme has settled
    page.evaluate(SETTLED)  # ... in a ResizeObserver callback, late on a busy machine
    found = {}
    for scheme, toggle in (("default", "__palette_1"), ("slate", "__palette_0")):
        assert scheme_of(page) == scheme
        found[scheme] = page.evaluate(MEASURE)
        page.click(f"label[for='{toggle}']")
    # every fold opened: what scrolls inside is named and focusable too (a11y.js reads it
    # once the browser lays the opened fold out)
    page.evaluate(OPEN_FOLDS)
    page.wait_for_timeout(200)
    found["folds open"] = page.evaluate(MEASURE)
    page.close()
    assert found["default"] == {"wrapped": [], "uncued": [], "small": []}
    assert found["slate"] == {"wrapped": [], "uncued": [], "small": []}
    assert found["folds open"]["uncued"] == found["folds open"]["small"] == []


def edge_brightness(page, element) -> tuple[float, float]:
    """Mean brightness (0-255) of the 6 px strips at the left and right edges of `element`."""
    from io import BytesIO

    from PIL import Image, ImageStat  # Pillow: a dependency of matplotlib

    picture = Image.open(BytesIO(element.screenshot())).convert("L")
    width, height = picture.size

    def mean(x0, x1):
        return ImageStat.Stat(picture.crop((x0, 0, x1, height))).mean[0]

    return mean(2, 8), mean(width - 8, width - 2)


@pytest.mark.parametrize(
    ("path", "selector"),
    [
        ("training/scaling/", ".tpu-costs .md-typeset__scrollwrap"),
        ("concepts/collectives/", ".per-device-table[role=region]"),
        ("training/fsdp/", ".output pre > code[role=group]"),
    ],
)
def test_the_scroll_cue_shows_at_the_edge_with_more_beyond(
    phone_context, base_url, path, selector
):
    """The cue is seen, not only styled: a shade darkens (light) or lightens (dark) the edge
    with more content beyond it, and goes once that edge is reached."""
    page, _ = visit(phone_context, base_url + path, wait="load")
    page.wait_for_timeout(100)
    for scheme, toggle, sign in (
        ("default", "__palette_1", -1),
        ("slate", "__palette_0", 1),
    ):
        assert scheme_of(page) == scheme
        box = page.locator(selector).first
        box.scroll_into_view_if_needed()
        box.evaluate("el => { el.scrollLeft = 0; }")
        left, right = edge_brightness(page, box)
        assert sign * (right - left) > 3, (scheme, "start", left, right)
        box.evaluate("el => { el.scrollLeft = el.scrollWidth; }")
        left, right = edge_brightness(page, box)
        assert sign * (left - right) > 3, (scheme, "end", left, right)
        page.click(f"label[for='{toggle}']")
    page.close()


def luminance(css_colour: str) -> float:
    from .test_site import relative_luminance

    return relative_luminance(css_colour)


def test_per_device_tables_follow_the_scheme_and_scroll_to_their_end(
    phone_context, base_url
):
    from .test_site import contrast

    page, _ = visit(phone_context, base_url + "concepts/collectives/", wait="load")
    page.wait_for_timeout(100)
    tables = page.locator("table.per-device")
    assert tables.count() >= 8
    for scheme, toggle in (("default", "__palette_1"), ("slate", "__palette_0")):
        assert scheme_of(page) == scheme
        for i in range(tables.count()):
            found = tables.nth(i).evaluate(INKS_ON_GROUND)
            dark = luminance(found["ground"]) < 0.05
            assert dark == (scheme == "slate"), (scheme, i, found["ground"])
            assert found["shown"], (scheme, i)
            for ink in found["inks"]:
                assert contrast(ink, found["ground"]) >= 4.5, (scheme, i, ink)
        page.click(f"label[for='{toggle}']")
    page.close()


def test_the_roofline_table_follows_the_scheme_and_its_source_links_stay_readable(
    phone_context, base_url
):
    """The inference-caches page's roofline table is a white card in the notebook, with links
    to the chips' published figures in its caption; on the dark page a link in the scheme's
    colour on that white card fell to under 4.5:1 (the daily axe run found it)."""
    from .test_site import contrast

    page, _ = visit(phone_context, base_url + "advanced/inference-caches/", wait="load")
    table = page.locator("table.roofline")
    assert table.count() == 1 and table.locator("caption a").count() >= 2
    for scheme, toggle in (("default", "__palette_1"), ("slate", "__palette_0")):
        assert scheme_of(page) == scheme
        found = table.evaluate(INKS_ON_GROUND)
        assert (luminance(found["ground"]) < 0.05) == (scheme == "slate"), found
        for ink in found["inks"] + found["links"]:
            assert contrast(ink, found["ground"]) >= 4.5, (scheme, ink)
        page.click(f"label[for='{toggle}']")
    page.close()


# A table's ground (its own background, or the nearest one behind it), the colours of its
# text and of its links, and whether scrolling its box to the end shows its right edge.
INKS_ON_GROUND = """(table) => {
  let ground = table, colour;
  while ((colour = getComputedStyle(ground).backgroundColor) === "rgba(0, 0, 0, 0)")
    ground = ground.parentElement;
  const colours = (selector) => [...new Set([...table.querySelectorAll(selector)]
    .filter((e) => e.textContent.trim()).map((e) => getComputedStyle(e).color))];
  const box = table.parentElement;
  box.scrollLeft = box.scrollWidth;
  const shown = box.getBoundingClientRect().right + 1 >= table.getBoundingClientRect().right;
  box.scrollLeft = 0;
  return {ground: colour, inks: colours("caption, th, td, span"), links: colours("a"), shown};
}"""


# Scrolls each shown code block with a copy button (not an output: .no-copy) into view, until
# the theme has mounted it (its button is there); the number of such blocks.
SCROLL_TO_EVERY_BLOCK = """async () => {
  const frame = () => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  const blocks = [...document.querySelectorAll("pre > code")]
    .filter(code => code.getClientRects().length && !code.closest(".no-copy"))
    .map(code => code.parentElement);
  for (const pre of blocks) {
    pre.scrollIntoView({block: "center"});
    for (let i = 0; i < 20 && !pre.querySelector("button.md-code__button"); i++) await frame();
  }
  return blocks.length;
}"""

COPY_OVER_CODE = """() => {
  const hits = [];
  for (const pre of document.querySelectorAll("pre")) {
    const button = pre.querySelector("button.md-code__button");
    const code = pre.querySelector(":scope > code");
    if (!button || !code || !code.getClientRects().length) continue;
    const b = button.getBoundingClientRect();
    // The first line: the text up to the first newline.
    const range = document.createRange();
    range.setStart(code, 0);
    const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
    for (let node; (node = walker.nextNode()); ) {
      const at = node.data.indexOf("\\n");
      if (at >= 0) { range.setEnd(node, at); break; }
      range.setEnd(node, node.data.length);
    }
    for (const r of range.getClientRects()) {
      if (r.width && r.left < b.right && b.left < r.right && r.top < b.bottom && b.top < r.bottom) {
        hits.push(code.textContent.split("\\n")[0].slice(0, 60));
        break;
      }
    }
  }
  return hits;
}"""


@pytest.mark.parametrize("width", [390, 1366])
@pytest.mark.parametrize(
    "path",
    ["basics/devices-and-meshes/", "training/fsdp/", "notebooks/training/fsdp/"],
)
def test_the_copy_button_covers_no_first_line_of_code(browser, base_url, width, path):
    context = browser.new_context(viewport={"width": width, "height": 900})
    page, _ = visit(context, base_url + path, wait="load")
    # Folded setup blocks are opened: their code counts too.
    page.evaluate(OPEN_FOLDS)
    # The theme gives a block its buttons when it first scrolls into view (mkdocs.yml's
    # content.lazy): every block is scrolled to, and then each has its button.
    shown = page.evaluate(SCROLL_TO_EVERY_BLOCK)
    assert shown > 2
    assert page.locator("pre:has(> code) button.md-code__button").count() == shown
    assert page.evaluate(COPY_OVER_CODE) == []
    context.close()
