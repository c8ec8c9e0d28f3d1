"""The home page's first screen, on a laptop and on a phone, in both schemes: the example, its
diagram and the path's first card are all in view before any scrolling."""

from __future__ import annotations

import pytest

from .test_site import visit

SCREENS = [
    pytest.param({"width": 1366, "height": 900}, id="1366x900"),
    pytest.param({"width": 390, "height": 844}, id="390x844"),
]
FIRST_SCREEN = {
    "the example": ".home-example pre",
    "its diagram": ".home-example .sharding-diagram svg",
    "what it prints": ".home-example .output",
    "the path's first card": ".home-path li:first-child",
}
# Where each lies, in the viewport's pixels, with the page at its top.
BOXES = """(selectors) => Object.fromEntries(Object.entries(selectors).map(([name, s]) => {
  const el = document.querySelector(s);
  if (!el) return [name, null];
  const r = el.getBoundingClientRect();
  return [name, {top: r.top, bottom: r.bottom, left: r.left, right: r.right}];
}))"""


@pytest.mark.parametrize("screen", SCREENS)
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_example_its_diagram_and_the_first_card_are_on_the_first_screen(
    browser, base_url, screen, scheme
):
    context = browser.new_context(viewport=screen, color_scheme=scheme)
    try:
        page, seen = visit(context, base_url, wait="load")
        expected = "slate" if scheme == "dark" else "default"
        assert page.evaluate("document.body.dataset.mdColorScheme") == expected
        boxes = page.evaluate(BOXES, FIRST_SCREEN)
        outside = {
            name: box
            for name, box in boxes.items()
            if box is None
            or box["top"] < 0
            or box["bottom"] > screen["height"]
            or box["left"] < 0
            or box["right"] > screen["width"]
        }
        assert outside == {}, outside
        assert seen.console_errors == []
    finally:
        context.close()
