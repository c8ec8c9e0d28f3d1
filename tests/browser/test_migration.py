"""The migration page's table in Chromium, at a laptop's 1366 px and a phone's 390 px (a touch
screen), in the light and the dark scheme: what each old spelling does on the pinned versions
reads in colour, icon and word, and its message is text in a fold that opens by keyboard and
by a tap (the compatibility matrix's, docs_build/versions/pages.py), never a `title` that only
a mouse shows; no text in it is under 11 px, and axe finds nothing with the folds open."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from docs_build.versions import pages

from .test_compatibility import AXE_RUN, TEXT_SIZES, VIEWS
from .test_site import contrast, scheme_of, visit

PATH = "guides/migration/"
TABLE = "table:has(th:text-is('Old spelling'))"
MIGRATION = Path(__file__).resolve().parents[2] / "docs" / "guides" / "migration.md"


def probes_in_the_table() -> list[str]:
    text = MIGRATION.read_text(encoding="utf-8")
    table = text[text.index("| Old spelling") : text.index("## Setup")]
    return re.findall(r"<!-- probe: ([\w-]+) -->", table)


# The colours of each state's label against its ground.
STATE_COLOURS = r"""(table) => Object.fromEntries(["runs", "warns", "raises"]
  .map((state) => [state, table.querySelector(`td .vm-${state}`)])
  .filter(([, el]) => el)
  .map(([state, el]) => {
    const style = getComputedStyle(el);
    return [state, [style.color, style.backgroundColor]];
  }))"""


@pytest.fixture(params=VIEWS)
def view(request):
    return request.param


@pytest.fixture
def migration_page(view, browser, base_url):
    width, scheme = view
    phone = width < 1000
    context = browser.new_context(
        viewport={"width": width, "height": 844 if phone else 900},
        color_scheme=scheme,
        has_touch=phone,
        is_mobile=phone,
    )
    page, seen = visit(context, base_url + PATH, wait="load")
    page.wait_for_timeout(300)  # Material wraps the table; a11y.js names what scrolls
    assert scheme_of(page) == {"light": "default", "dark": "slate"}[scheme]
    yield page, phone
    assert seen.foreign == seen.failed == seen.console_errors == []
    context.close()


def test_every_message_is_a_fold_and_none_a_title(migration_page):
    page, _ = migration_page
    table = page.locator(TABLE)
    assert table.count() == 1
    assert table.locator("td [title]").count() == 0
    pinned = pages.pinned_row()["results"]
    ids = probes_in_the_table()
    rows = table.locator("tbody tr")
    assert rows.count() == len(ids)
    folds = 0
    for i, probe in enumerate(ids):
        result = pinned[probe]
        said = [result[k] for k in ("warning_message", "message") if result.get(k)]
        fold = rows.nth(i).locator("td:nth-child(3) details.vm-fold")
        assert fold.count() == (1 if said else 0), probe
        if said:
            folds += 1
            texts = fold.locator(".vm-message p").all_text_contents()
            assert [t.split(": ", 1)[1] for t in texts] == said, probe
    assert folds >= 10


def test_a_message_opens_by_keyboard_and_by_a_tap(migration_page):
    page, phone = migration_page
    table = page.locator(TABLE)
    row = table.locator("tbody tr:has(details)").first
    fold = row.locator("details")
    message = fold.locator(".vm-message")
    assert not message.is_visible()
    # Tab from the row's link (its first cell) reaches the fold's label; Enter opens it.
    row.locator("td:first-child a").focus()
    page.keyboard.press("Tab")
    assert fold.locator("summary").evaluate("s => s === document.activeElement")
    page.keyboard.press("Enter")
    assert fold.evaluate("d => d.open") and message.is_visible()
    message.scroll_into_view_if_needed()
    box = message.bounding_box()
    width = page.viewport_size["width"]
    assert box["width"] > 100 and box["x"] >= 0 and box["x"] + box["width"] <= width
    page.keyboard.press("Enter")
    assert not fold.evaluate("d => d.open")
    # A tap on a phone, a click on a laptop, opens another.
    other = table.locator("tbody tr:has(details)").nth(1).locator("details")
    summary = other.locator("summary")
    summary.tap() if phone else summary.click()
    assert other.evaluate("d => d.open")
    assert other.locator(".vm-message").is_visible()


def test_states_read_in_colour_icon_and_word_at_enough_contrast(migration_page):
    page, _ = migration_page
    table = page.locator(TABLE)
    colours = table.evaluate(STATE_COLOURS)
    assert "raises" in colours and "runs" in colours
    for state, (text, ground) in colours.items():
        assert contrast(text, ground) >= 4.5, (state, text, ground)
        label = table.locator(f"td .vm-{state}").first
        assert label.locator(".vm-icon").inner_text() == pages.STATES[state][0]


def test_no_text_in_the_table_is_under_11_px(migration_page):
    page, _ = migration_page
    # every piece of text a reader can see in the third column, every fold open
    sizes = (
        page.locator(TABLE).locator("tbody td:nth-child(3)").evaluate_all(TEXT_SIZES)
    )
    assert len(sizes) > 30
    assert [s for s in sizes if s[0] < 11] == []


def test_axe_finds_nothing_on_the_page_with_the_folds_open(
    migration_page, axe_script: Path
):
    """The whole page, on a touch screen too: its wide code blocks scroll and must take the
    keyboard's focus there as well (a11y.js puts back the tabindex the theme removes where
    nothing can hover)."""
    page, _ = migration_page
    page.locator(TABLE).evaluate(
        "(t) => t.querySelectorAll('details').forEach((d) => { d.open = true; })"
    )
    page.wait_for_timeout(300)  # the opened folds' code may scroll: a11y.js names it
    page.add_script_tag(path=str(axe_script))
    assert page.evaluate(f"({AXE_RUN})()") == []
