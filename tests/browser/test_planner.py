"""The strategy planner, driven through its own form for a grid of inputs and compared,
figure by figure and to the byte, with docs_build/planner.py (docs_build.planner_page); used
with the keyboard; and read without its script."""

from __future__ import annotations

import functools
import operator

import pytest

from docs_build import planner_page

from .conftest import EVERY
from .test_site import visit

PAGE = "tools/strategy-planner/"

# Types each case into the form as a reader would, and reads back what the page shows: the
# error, or every row's figures (exact bytes from data attributes, and the text shown) and
# the layouts left out with their reasons.
DRIVE = """(cases) => {
  const root = document.getElementById('planner-app');
  const form = root.querySelector('form');
  const set = (name, value) => {
    const field = form.elements[name];
    if (field.type === 'checkbox') field.checked = value;
    else field.value = String(value);
    field.dispatchEvent(new Event(field.tagName === 'SELECT' ? 'change' : 'input',
                                  {bubbles: true}));
  };
  return cases.map((c) => {
    for (const [name, value] of Object.entries(c)) set(name, value);
    const answer = root.querySelector('[data-planner=answer]');
    const alert = answer.querySelector('[role=alert]');
    if (alert) return {error: alert.textContent};
    return {
      rows: [...answer.querySelectorAll('[data-planner=row]')].map((tr) => ({
        layout: tr.dataset.layout,
        mesh: tr.dataset.mesh.split(',').map(Number),
        state: tr.dataset.state,
        wire: tr.dataset.wire,
        fits: tr.dataset.fits === 'true',
        checked: tr.dataset.checked === 'true',
        basis: tr.querySelector('[data-planner=basis]').textContent,
        terms: Object.fromEntries([...tr.querySelectorAll('[data-term]')].map(
          (dt) => [dt.dataset.term, dt.dataset.bytes])),
        shown: [tr.querySelector('[data-planner=state]').textContent,
                tr.querySelector('[data-planner=wire]').textContent],
      })),
      left_out: [...answer.querySelectorAll('[data-planner=left-out] li')].map((li) => ({
        layout: li.dataset.layout,
        reason: li.querySelector('[data-planner=reason]').textContent,
      })),
    };
  });
}"""


def read_back(result: dict) -> dict:
    """The page's figures as numbers (shortest round-trip text in both languages)."""
    if "error" in result:
        return result
    rows = []
    for r in result["rows"]:
        rows.append(
            {
                **{k: r[k] for k in ("layout", "mesh", "fits", "checked", "basis")},
                "state": float(r["state"]),
                "wire": float(r["wire"]),
                "terms": {k: float(v) for k, v in r["terms"].items()},
            }
        )
    return {"rows": rows, "left_out": result["left_out"]}


def test_the_grid_covers_what_the_form_offers():
    grid = planner_page.cases()
    assert len(grid) >= planner_page.MINIMUM_CASES
    assert {c["devices"] for c in grid} >= {1, 256}
    for field, values in (
        ("optimizer", {"sgd", "momentum", "adam", "adamw"}),
        ("param_bytes", {2, 4}),
        ("backend", {"cpu", "tpu"}),
        ("plan", set(planner_page.plans())),
        ("remat", {True, False}),
    ):
        assert {c[field] for c in grid} == values, field
    answers = [planner_page.answer(c) for c in grid]
    # rows where Python's compensated sum() of the wire terms differs from a plain sum
    compensated = [
        r
        for a in answers
        for r in a.get("rows", [])
        if functools.reduce(operator.add, r["terms"].values()) != r["wire"]
    ]
    assert len(compensated) >= 8
    assert sum("error" in a for a in answers) == len(planner_page.REFUSED)
    assert any(a.get("left_out") for a in answers)
    assert {r["layout"] for a in answers for r in a.get("rows", [])} == {
        "data",
        "FSDP",
        "tensor",
        "2-D",
        "data x FSDP",
        "FSDP x tensor",
        "pipeline",
    }


@pytest.mark.parametrize("step", EVERY)
def test_the_page_shows_what_the_planner_computes_for_every_case(
    context, base_url, step
):
    grid = planner_page.cases()[::step]
    page, seen = visit(context, base_url + PAGE, wait="load")
    got = page.evaluate(DRIVE, grid)
    page.close()
    assert seen.console_errors == [] and seen.foreign == []
    wrong = []
    for case, result in zip(grid, got, strict=True):
        want = planner_page.answer(case)
        if read_back(result) != want:
            wrong.append((case, want, result))
            continue
        for row, shown in zip(
            want.get("rows", []), result.get("rows", []), strict=True
        ):
            assert shown["shown"] == [
                planner_page.size_text(row["state"]),
                planner_page.size_text(row["wire"]),
            ]
    assert not wrong, f"{len(wrong)} of {len(grid)} cases differ; the first: {wrong[0]}"


def test_a_reader_changes_the_devices_with_the_keyboard(context, base_url):
    page, _ = visit(context, base_url + PAGE, wait="load")
    rows = page.locator("[data-planner=row]")
    before = rows.count()
    page.focus("input[name=vocab]")
    for _ in range(12):  # Tab through the form to the devices field, as a reader would
        if page.evaluate("document.activeElement.name") == "devices":
            break
        page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.name") == "devices"
    page.keyboard.press("Control+A")
    page.keyboard.type("4")
    assert rows.count() != before
    assert rows.first.get_attribute("data-mesh") == "4,1,1,1"
    summary = page.locator("[data-planner=summary]").text_content()
    assert summary.startswith(f"{rows.count()} layouts divide this model")
    # the formula behind a number opens from the keyboard
    page.focus("[data-planner=row] summary")
    page.keyboard.press("Enter")
    page.wait_for_function(
        "document.querySelector('[data-planner=row] details').open", timeout=2000
    )
    assert page.locator("[data-planner=row] dd").first.is_visible()
    page.close()


def test_a_reader_is_told_what_to_change(context, base_url):
    page, _ = visit(context, base_url + PAGE, wait="load")
    page.fill("input[name=heads]", "7")
    alert = page.locator("[role=alert]")
    assert alert.text_content() == (
        "d_model 1024 does not split into 7 heads: make d_model a multiple of heads"
    )
    page.fill("input[name=heads]", "8")
    page.fill("input[name=layers]", "six")
    assert alert.text_content() == "layers must be a positive integer, not 'six'"
    page.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_without_its_script_the_page_is_a_table_of_examples(browser, base_url, scheme):
    context = browser.new_context(java_script_enabled=False, color_scheme=scheme)
    page, seen = visit(context, base_url + PAGE, wait="load")
    assert page.locator("#planner-app").is_hidden()
    tables = page.locator("article table")
    assert tables.count() == len(planner_page.EXAMPLES)
    for k, case in enumerate(planner_page.EXAMPLES):
        found = planner_page.answer(case)
        rows = tables.nth(k).locator("tbody tr")
        assert rows.count() == len(found["rows"]) + len(found["left_out"])
        first = rows.first.locator("td")
        assert first.nth(2).text_content() == planner_page.size_text(
            found["rows"][0]["state"]
        )
    context.close()
    assert seen.failed == []
