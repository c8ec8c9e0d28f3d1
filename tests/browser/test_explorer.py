"""The sharding explorer, driven through its own form for every case of the grid JAX answered
(docs_build/explorer.py), and used with the keyboard and without its script."""

from __future__ import annotations

import pytest

from docs_build import explorer

from .conftest import EVERY
from .test_site import visit

PAGE = "tools/sharding-explorer/"

# Types each case into the form as a reader would (the fields, then each dimension's menu),
# and reads back what the page shows: JAX's error, or the bytes and every device's indices.
# The form as a reader fills it: `type` into a field, `pick` each dimension's menu of a spec.
FORM = """
  const root = document.getElementById('explorer-app');
  const form = root.querySelector('form');
  const type = (name, value) => {
    const field = form.elements[name];
    field.value = value;
    field.dispatchEvent(new Event('input', {bubbles: true}));
  };
  const pick = (selector, spec) => {
    const menus = root.querySelectorAll(selector);
    if (menus.length !== spec.length) return menus.length;
    spec.forEach((entry, d) => {
      menus[d].value = entry === null ? 'None' : entry.join('+');
      menus[d].dispatchEvent(new Event('change', {bubbles: true}));
    });
    return menus.length;
  };
"""

DRIVE = (
    """(cases) => {"""
    + FORM
    + """
  return cases.map((c) => {
    type('shape', c.shape.join(', '));
    type('mesh', c.mesh.join(', '));
    type('names', c.names.join(', '));
    form.elements['dtype'].value = c.dtype;
    form.elements['dtype'].dispatchEvent(new Event('change', {bubbles: true}));
    const menus = pick('[data-explorer=spec] select', c.spec);
    if (menus !== c.shape.length) return {menus: menus};
    const answer = root.querySelector('[data-explorer=answer]');
    const error = answer.querySelector('[data-explorer=error]');
    if (error) return {error: error.textContent};
    const summary = answer.querySelector('[data-explorer=summary]');
    return {
      bytes: summary ? Number(summary.dataset.bytes) : null,
      spec: answer.querySelector('[data-explorer=spec-text]').textContent,
      indices: [...answer.querySelectorAll('[data-explorer=indices]')].map(
        (td) => td.textContent),
    };
  });
}"""
)


def shown(answer: dict) -> dict:
    """What the page should show for JAX's answer to a case."""
    if "error" in answer:
        return {"error": answer["error"]}
    return {
        "bytes": answer["bytes"],
        "indices": [
            ", ".join(f"{a}:{b}" for a, b in block) for block in answer["blocks"]
        ],
    }


@pytest.mark.parametrize("step", EVERY)
def test_the_page_shows_what_jax_answers_for_every_case_of_the_grid(
    context, base_url, step
):
    grid, answers = explorer.cases()[::step], explorer.expected()[::step]
    page, seen = visit(context, base_url + PAGE, wait="load")
    got = []
    for start in range(0, len(grid), 100):
        got += page.evaluate(DRIVE, grid[start : start + 100])
    page.close()
    assert seen.console_errors == [] and seen.foreign == []
    wrong = []
    for case, answer, result in zip(grid, answers, got, strict=True):
        want = shown(answer)
        have = {k: v for k, v in result.items() if k in want}
        if have != want:
            wrong.append((case, want, result))
        elif "error" not in answer:
            assert result["spec"] == explorer.spec_text(case["spec"])
    assert not wrong, f"{len(wrong)} of {len(grid)} cases differ; the first: {wrong[0]}"


# Types a move into the form (the case, then the target's menus and the backend) and reads
# back the plan the page shows: its steps, [] for nothing sent, "unknown", or JAX's error.
DRIVE_MOVES = (
    """(moves) => {"""
    + FORM
    + """
  return moves.map((m) => {
    type('shape', m.shape.join(', '));
    type('mesh', m.mesh.join(', '));
    type('names', m.names.join(', '));
    form.elements['dtype'].value = m.dtype;
    form.elements['backend'].value = m.backend;
    if (pick('[data-explorer=spec] select', m.source) !== m.shape.length) return 'menus';
    if (pick('[data-explorer=target] select', m.target) !== m.shape.length) return 'menus';
    const out = root.querySelector('[data-explorer=move]');
    if (out.querySelector('[data-explorer=move-unknown]')) return 'unknown';
    if (out.querySelector('[data-explorer=move-none]')) return [];
    const error = out.querySelector('[data-explorer=move-error]');
    if (error) return error.textContent;
    return [...out.querySelectorAll('[data-explorer=move-step]')].map((row) => ({
      kind: row.dataset.kind,
      group: row.dataset.group === '' ? null : Number(row.dataset.group),
      groups: Number(row.dataset.groups),
      wire: Number(row.dataset.wire),
    }));
  });
}"""
)


@pytest.mark.parametrize("step", EVERY)
def test_the_page_shows_the_compiled_plan_of_every_move_it_names(
    context, base_url, step
):
    moves = explorer.moves()[::step]
    jobs = [explorer.move_job(m) for m in moves]
    page, seen = visit(context, base_url + PAGE, wait="load")
    got = []
    for start in range(0, len(jobs), 100):
        got += page.evaluate(DRIVE_MOVES, jobs[start : start + 100])
    page.close()
    assert seen.console_errors == [] and seen.foreign == []
    wrong = [
        (m, shown)
        for m, shown in zip(moves, got, strict=True)
        if shown != "unknown"
        and (not isinstance(shown, list) or not explorer.same_plan(shown, m["plan"]))
    ]
    assert not wrong, (
        f"{len(wrong)} of {len(moves)} moves differ; the first: {wrong[0]}"
    )
    # the page says it does not know exactly where its script (run by the build) does not
    unknown = [m for m, shown in zip(moves, got, strict=True) if shown == "unknown"]
    assert unknown == [m for m in explorer.moves_report()["unmodelled"] if m in moves]
    assert len(moves) - len(unknown) >= explorer.MINIMUM_CASES / step


def test_a_reader_moves_an_array_with_the_keyboard(context, base_url):
    page, _ = visit(context, base_url + PAGE, wait="load")
    page.focus("#explorer-spec-0")
    page.keyboard.press("ArrowDown")  # the source: P('x', None, None)
    out = page.locator("[data-explorer=move]")
    assert "P('x', None, None)" in out.text_content()
    assert out.locator("[data-explorer=move-step]").count() == 1  # gathered back
    assert out.locator("[data-explorer=move-step]").get_attribute("data-kind") == (
        "all-gather"
    )
    page.focus("#explorer-target-0")
    page.keyboard.press("ArrowDown")  # the target too: nothing moves
    assert out.locator("[data-explorer=move-none]").count() == 1
    page.close()


def test_a_reader_changes_the_spec_with_the_keyboard(context, base_url):
    page, _ = visit(context, base_url + PAGE, wait="load")
    summary = page.locator("[data-explorer=summary]")
    before = summary.text_content()
    page.focus("#explorer-spec-0")
    page.keyboard.press("ArrowDown")  # None -> 'x': the first dimension splits over x
    assert (
        page.locator("[data-explorer=spec-text]").text_content() == "P('x', None, None)"
    )
    assert summary.text_content() != before
    assert "(4, 6, 4)" in summary.text_content()
    page.close()


def test_a_reader_gets_a_plain_message_for_a_malformed_shape(context, base_url):
    page, _ = visit(context, base_url + PAGE, wait="load")
    page.fill("input[name=shape]", "8, six")
    alert = page.locator("[role=alert]")
    assert (
        alert.text_content() == "Array shape: six is not a whole number of at least 1."
    )
    page.fill("input[name=mesh]", "16, 32")
    page.fill("input[name=shape]", "8")
    assert "512 devices" in alert.text_content()
    page.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_without_its_script_the_page_is_a_table_of_examples(browser, base_url, scheme):
    context = browser.new_context(
        java_script_enabled=False, color_scheme="dark" if scheme == "dark" else "light"
    )
    page, seen = visit(context, base_url + PAGE, wait="load")
    assert page.locator("#explorer-app").is_hidden()
    tables = page.locator("table")
    rows = tables.nth(0).locator("tbody tr")
    assert rows.count() == len(explorer.EXAMPLES)
    assert "IndivisibleError" in rows.nth(len(explorer.EXAMPLES) - 2).text_content()
    # and the moves, as compiled
    moves = tables.nth(1).locator("tbody tr")
    assert moves.count() == len(explorer.moves_table().splitlines()) - 2
    assert "all-to-all" in tables.nth(1).text_content()
    context.close()
    assert seen.failed == []
