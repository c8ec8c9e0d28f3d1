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
    out = page.locator("[data-explorer=move]")
    # the default: P('x', 'y') to P('x', None) on a TPU, gathered over 'y'
    assert "P('x', 'y')" in out.text_content()
    assert out.locator("[data-explorer=move-step]").count() == 1
    step = out.locator("[data-explorer=move-step]")
    assert step.get_attribute("data-kind") == "all-gather"
    assert step.get_attribute("data-group") == "4"
    page.focus("#explorer-target-1")
    page.keyboard.press("ArrowDown")  # 'x': named twice, refused
    assert out.locator("[data-explorer=move-error]").count() == 1
    page.keyboard.press("ArrowDown")  # 'y': the source's own spec, nothing moves
    assert out.locator("[data-explorer=move-none]").count() == 1
    page.close()


def test_a_reader_changes_the_spec_with_the_keyboard(context, base_url):
    page, _ = visit(context, base_url + PAGE, wait="load")
    summary = page.locator("[data-explorer=summary]")
    before = summary.text_content()
    page.focus("#explorer-spec-0")
    page.keyboard.press("ArrowUp")  # 'x' -> None: only 'y' splits the array
    assert page.locator("[data-explorer=spec-text]").text_content() == "P(None, 'y')"
    assert summary.text_content() != before
    assert "(1024, 1024)" in summary.text_content()
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


# The default case as drawn, at the viewport's width: each figure's blocks (their outline,
# how many, their colours), its words, the page's width and every text's rendered size.
DRAWN = """() => {
  const app = document.getElementById('explorer-app');
  const box = (el) => el.getBoundingClientRect();
  const figure = (role) => {
    const f = app.querySelector(`[data-explorer=figure-${role}]`);
    if (!f) return null;
    const rects = [...f.querySelectorAll('svg rect')].map(box);
    const left = Math.min(...rects.map((r) => r.left));
    const right = Math.max(...rects.map((r) => r.right));
    const top = Math.min(...rects.map((r) => r.top));
    const bottom = Math.max(...rects.map((r) => r.bottom));
    const b = box(f);
    return {
      ratio: (right - left) / (bottom - top),
      blocks: rects.length,
      colours: [...new Set([...f.querySelectorAll('svg rect')].map(
        (r) => getComputedStyle(r).fill))],
      words: f.textContent,
      top: b.top, bottom: b.bottom, left: b.left, right: b.right,
    };
  };
  const small = [];
  const walker = document.createTreeWalker(app, NodeFilter.SHOW_TEXT);
  for (let node; (node = walker.nextNode()); ) {
    const el = node.parentElement;
    if (!node.data.trim() || !el.getClientRects().length || el.closest('select')) continue;
    let size = parseFloat(getComputedStyle(el).fontSize);
    const svg = el.closest('svg');
    if (svg) size *= box(svg).width / svg.viewBox.baseVal.width;
    if (size < 11) small.push(`${size.toFixed(1)} px: ${node.data.trim().slice(0, 40)}`);
  }
  const time = app.querySelector('[data-explorer=move-time]');
  return {
    scheme: document.body.getAttribute('data-md-color-scheme'),
    source: figure('source'),
    target: figure('target'),
    small,
    wide: document.documentElement.scrollWidth > window.innerWidth,
    seconds: JSON.parse(time.dataset.seconds || 'null'),
    time: time.textContent,
    total: app.querySelector('[data-explorer=move-total]').textContent,
    summary: app.querySelector('[data-explorer=summary]').textContent,
  };
}"""


@pytest.mark.parametrize(
    ("width", "scheme"),
    [
        (1366, "light"),
        (390, "dark"),
        pytest.param(1366, "dark", marks=pytest.mark.daily),
        pytest.param(390, "light", marks=pytest.mark.daily),
    ],
)
def test_the_default_draws_a_wide_array_split_both_ways_and_its_move(
    browser, base_url, width, scheme
):
    from docs_build import costmodel as cm

    context = browser.new_context(
        viewport={"width": width, "height": 900}, color_scheme=scheme
    )
    page, seen = visit(context, base_url + PAGE, wait="load")
    page.wait_for_timeout(100)
    drawn = page.evaluate(DRAWN)
    context.close()
    assert seen.console_errors == [] and seen.foreign == []
    assert drawn["scheme"] == ("slate" if scheme == "dark" else "default")
    # a (1024, 4096) array on 2 x 4 devices, split both ways: wide, 8 blocks, 8 colours
    source, target = drawn["source"], drawn["target"]
    assert (
        "(512, 1024)" in drawn["summary"] and "2.00 MiB of float32" in drawn["summary"]
    )
    assert source["ratio"] == pytest.approx(4096 / 1024, rel=0.03)
    assert source["blocks"] == 8 and len(source["colours"]) == 8
    assert "dimension 0 (1024), cut by 'x' into 2" in source["words"]
    assert "dimension 1 (4096), cut by 'y' into 4" in source["words"]
    # the target beside it (below it on a phone), each device in its colour
    assert (
        "P('x', None)" in target["words"]
        and "dimension 1 (4096), whole" in target["words"]
    )
    assert target["blocks"] == 2 and set(target["colours"]) < set(source["colours"])
    if width >= 1000:
        assert target["top"] == source["top"] and target["left"] > source["right"]
    else:
        assert target["top"] >= source["bottom"]
    # the move's bytes in binary units and its time bound at each TPU's published rate
    sent = 3 / 4 * 512 * 4096 * 4
    assert "In all, 6.00 MiB sent per device" in drawn["total"]
    assert drawn["seconds"] == pytest.approx(
        {k: sent / cm.LINKS[k].within for k in ("v5e", "v5p")}
    )
    assert "lower bound" in drawn["time"] and "31.5 µs on TPU v5e" in drawn["time"]
    # readable where it is: no text under 11 px, nothing wider than the screen
    assert drawn["small"] == []
    assert not drawn["wide"]


def test_a_move_it_does_not_name_shows_the_program_that_compiles_it(context, base_url):
    move = next(
        m
        for m in explorer.moves_report()["unmodelled"]
        if m["backend"] == "cpu" and m["case"]["dtype"] == "bfloat16"
    )
    job = explorer.move_job(move)
    want = explorer.script_call(
        "moveProgram", [[explorer.move_case(job), job["target"]]]
    )
    page, seen = visit(context, base_url + PAGE, wait="load")
    shown = page.evaluate(
        "(m) => {"
        + FORM
        + """
      type('shape', m.shape.join(', '));
      type('mesh', m.mesh.join(', '));
      type('names', m.names.join(', '));
      form.elements['dtype'].value = m.dtype;
      form.elements['backend'].value = m.backend;
      pick('[data-explorer=spec] select', m.source);
      pick('[data-explorer=target] select', m.target);
      const out = root.querySelector('[data-explorer=move]');
      const program = out.querySelector('[data-explorer=move-program]');
      return {program: program && program.textContent,
              doubled: !!out.querySelector('[data-explorer=cpu-bfloat16]')};
    }""",
        job,
    )
    page.close()
    assert seen.console_errors == []
    assert shown == {"program": want[0], "doubled": True}


def test_the_caption_says_when_colours_repeat(context, base_url):
    page, _ = visit(context, base_url + PAGE, wait="load")
    caption = page.locator("[data-explorer=figure-source] figcaption")
    assert "repeat" not in caption.text_content()  # 8 devices, 8 colours
    page.fill("input[name=mesh]", "4, 4")
    assert "colours repeat every 8 devices" in caption.text_content()
    colours = page.evaluate(
        """() => [...document.querySelectorAll('[data-explorer=figure-source] rect')]
          .map((r) => getComputedStyle(r).fill)"""
    )
    assert len(colours) == 16 and len(set(colours)) == 8
    # time bounds: on a TPU slice; not past one 8-GPU NVLink node, nor on a CPU
    time = page.locator("[data-explorer=move-time]")
    assert time.get_attribute("data-seconds") is not None
    page.select_option("select[name=backend]", "gpu")
    assert page.locator("[data-explorer=move-step]").count() == 1
    assert time.text_content().startswith("No time bound: a mesh of more than 8 GPUs")
    page.fill("input[name=mesh]", "2, 4")
    assert "on H100 SXM (NVLink, 450 GB/s" in time.text_content()
    page.select_option("select[name=backend]", "cpu")
    assert time.text_content().startswith("No time bound: a CPU has no published")
    page.close()
