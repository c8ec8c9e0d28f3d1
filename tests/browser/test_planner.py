"""The strategy planner, driven through its own form for a grid of inputs and compared,
figure by figure and to the byte, with docs_build/planner.py (docs_build.planner_page): the
rows it greys and why, and each field it marks and what it says; its presets and their
parameter counts; used with the keyboard; and read without its script."""

from __future__ import annotations

import functools
import operator

import pytest

from docs_build import planner as pl
from docs_build import planner_page

from .conftest import EVERY
from .test_site import AXE_OPTIONS, AXE_RUN, scheme_of, visit

PAGE = "tools/strategy-planner/"

# Types each case into the form as a reader would, and reads back what the page shows: the
# message beside each field it marks, or every row in the page's order: its figures (exact
# bytes, seconds and ranks from data attributes, and the text of each cell), or, greyed,
# why the layout cannot split the model; and the chip's note above the table.
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
    const marked = [...root.querySelectorAll('[data-error-for]')].filter(
      (e) => e.textContent !== '');
    const rows = [...answer.querySelectorAll('[data-planner=row]')];
    if (marked.length) {
      return {errors: Object.fromEntries(marked.map(
        (e) => [e.dataset.errorFor, e.textContent])), rows: rows.length};
    }
    const chip = answer.querySelector('[data-planner=chip]');
    const slice = answer.querySelector('[data-planner=slice]');
    return {
      chip: chip && chip.textContent,
      slice: slice && slice.textContent,
      rows: rows.map((tr) => {
        const where = {layout: tr.dataset.layout, rank: tr.dataset.rank,
                       mesh: tr.dataset.mesh.split(',').map(Number)};
        if (tr.dataset.valid === 'false') {
          const refused = tr.querySelector('[data-planner=refused]');
          return {...where, valid: false, greyed: tr.classList.contains('planner-invalid'),
                  reason: tr.querySelector('[data-planner=reason]').textContent,
                  ...(refused ? {refused: refused.textContent} : {})};
        }
        const d = tr.dataset;
        const time = d.why !== undefined ? {why: d.why} : {
          compute: d.compute, networks: JSON.parse(d.networks),
          perfect_overlap: d.perfectOverlap, no_overlap: d.noOverlap, mfu: d.mfu,
          compute_bound: d.computeBound};
        const memory = d.temporaries === undefined ? {} : {
          temporaries: d.temporaries, total: d.total, room: d.room,
          total_fits: d.totalFits === 'true', host: d.host};
        return {
          ...where,
          ...memory,
          time,
          cells: [...tr.cells].filter((td) => td.dataset.planner !== 'formulas').map(
            (td) => td.textContent),
          valid: true,
          state: tr.dataset.state,
          wire: tr.dataset.wire,
          fits: tr.dataset.fits === 'true',
          checked: tr.dataset.checked === 'true',
          basis: tr.querySelector('[data-planner=basis]').textContent,
          terms: Object.fromEntries([...tr.querySelectorAll('[data-term]')].map(
            (dt) => [dt.dataset.term, dt.dataset.bytes])),
          shown: [tr.querySelector('[data-planner=state]').textContent,
                  tr.querySelector('[data-planner=wire]').textContent],
        };
      }),
    };
  });
}"""


def read_back(result: dict) -> dict:
    """The page's figures as numbers (shortest round-trip text in both languages, whole
    bytes as integers, Infinity as float's), in the page's order; marked fields leave no
    table."""
    if "errors" in result:
        assert result["rows"] == 0
        return {"errors": result["errors"]}
    rows = []
    for r in result["rows"]:
        where = {
            "layout": r["layout"],
            "mesh": r["mesh"],
            "valid": r["valid"],
            "rank": int(r["rank"]) if r["rank"] else None,
        }
        if not r["valid"]:
            assert r["greyed"]
            refused = {"refused": r["refused"]} if "refused" in r else {}
            rows.append({**where, "reason": r["reason"], **refused})
            continue
        row = {
            **where,
            **{k: r[k] for k in ("fits", "checked", "basis")},
            "state": float(r["state"]),
            "wire": float(r["wire"]),
            "terms": {k: float(v) for k, v in r["terms"].items()},
            "time": {
                k: v if k in ("why", "networks") else float(v)
                for k, v in r["time"].items()
            },
        }
        if "temporaries" in r:
            row |= {
                "temporaries": int(r["temporaries"]),
                "total": int(r["total"]),
                "room": float(r["room"]),
                "total_fits": r["total_fits"],
                "host": int(r["host"]),
            }
        rows.append(row)
    # what the page says of a TPU chip's slice (tpu_slices.note)
    return {"rows": rows, **({"slice": result["slice"]} if result["slice"] else {})}


def typed(grid: list[dict]) -> list[dict]:
    """The cases as a reader types them: the remat field holds a name (none, full or
    the policy's), not Model.remat's value."""
    return [{**c, "remat": planner_page.remat_text(c["remat"])} for c in grid]


def wanted(case: dict) -> dict:
    """What the page should show for a case: Python's answer, its rows as the page orders
    them (planner_page.ordered)."""
    found = planner_page.answer(case)
    if "rows" in found:
        kept = {k: found[k] for k in ("slice",) if k in found}
        found = {"rows": planner_page.ordered(found["rows"]), **kept}
    return found


def shown_as_python(case: dict, result: dict) -> list:
    """What differs between the cells the page shows and planner_page's words for them
    (example_cells, the static examples' columns; empty cells left out, as the script
    spans some), and between the chip's note and Python's."""
    chip = case["chip"]
    facts = planner_page.chip_facts(chip)
    wrong = []
    if result["chip"] != f"{facts['label']}: {planner_page.chip_note(chip)}":
        wrong.append(("chip", result["chip"]))
    rows = planner_page.ordered(planner_page.answer(case)["rows"])
    for row, shown in zip(rows, result["rows"], strict=True):
        if not row["valid"]:
            continue
        want = [c for c in planner_page.example_cells(row, chip) if c]
        if [c for c in shown["cells"] if c] != want:
            wrong.append((want, shown["cells"]))
    return wrong


def test_the_grid_covers_what_the_form_offers():
    grid = planner_page.cases()
    assert len(grid) >= planner_page.MINIMUM_CASES
    assert {c["devices"] for c in grid} >= {1, 256}
    for field, values in (
        ("optimizer", {"sgd", "momentum", "adam", "adamw"}),
        ("param_bytes", {2, 4}),
        ("backend", {"cpu", "tpu"}),
        ("plan", set(planner_page.plans())),
        ("remat", {*planner_page.REMAT_FORM.values(), "dot"}),
        ("gated", {True, False}),
        ("tied", {True, False}),
        ("preset", {planner_page.CUSTOM, *planner_page.presets()}),
    ):
        assert {c[field] for c in grid} == values, field
    # multi-head, grouped-query and multi-query attention
    assert {c["kv_heads"] == c["heads"] for c in grid} == {True, False}
    assert any(c["kv_heads"] == 1 for c in grid)
    answers = [planner_page.answer(c) for c in grid]
    # rows where Python's compensated sum() of the wire terms differs from a plain sum
    compensated = [
        r
        for a in answers
        for r in a.get("rows", [])
        if r["valid"]
        and functools.reduce(operator.add, r["terms"].values()) != r["wire"]
    ]
    assert len(compensated) >= 8
    assert sum("errors" in a for a in answers) == len(planner_page.REFUSED)
    # greyed rows beside priced ones, for every reason a layout gives
    greyed = [r["reason"] for a in answers for r in a.get("rows", []) if not r["valid"]]
    for reason in (
        "layers do not split into",
        "microbatches: use a number",
        "sequences does not split over fsdp",
        "does not split over data x fsdp",
        "ways (fsdp)",
        "vocab ",
        "heads ",
        "kv_heads ",
        "mlp ",
    ):
        assert any(reason in r for r in greyed), reason
    assert any(
        {r["valid"] for r in a.get("rows", [])} == {True, False} for a in answers
    )
    assert {r["layout"] for a in answers for r in a.get("rows", [])} == {
        "data",
        "FSDP",
        "tensor",
        "2-D",
        "data x FSDP",
        "FSDP x tensor",
        "data x FSDP x tensor",
        "pipeline",
        "pipeline x FSDP",
        "pipeline x tensor",
        "pipeline x FSDP x tensor",
    }


@pytest.mark.parametrize("step", EVERY)
def test_the_page_shows_what_the_planner_computes_for_every_case(
    context, base_url, step
):
    grid = planner_page.cases()[::step]
    page, seen = visit(context, base_url + PAGE, wait="load")
    got = page.evaluate(DRIVE, typed(grid))
    page.close()
    assert seen.console_errors == [] and seen.foreign == []
    wrong = []
    for case, result in zip(grid, got, strict=True):
        want = wanted(case)
        if read_back(result) != want:
            wrong.append((case, want, result))
            continue
        if "rows" not in want:
            continue
        differ = shown_as_python(case, result)
        if differ:
            wrong.append((case, differ))
        for row, shown in zip(want["rows"], result["rows"], strict=True):
            if not row["valid"]:
                continue
            assert shown["shown"] == [
                planner_page.size_text(row["state"]),
                planner_page.size_text(row["wire"]),
            ]
    assert not wrong, f"{len(wrong)} of {len(grid)} cases differ; the first: {wrong[0]}"
    # the sample holds every chip, ranked rows and each kind of threshold
    answers = [wanted(c)["rows"] for c in grid if "rows" in wanted(c)]
    assert {c["chip"] for c in grid} == set(planner_page.CHIPS)
    assert any(r["rank"] for rows in answers for r in rows)
    bounds = {
        planner_page.bound_text(r["time"]["compute_bound"])
        for rows in answers
        for r in rows
        if "compute_bound" in r.get("time", {})
    }
    assert {"never", "any"} < bounds


def test_the_page_greys_and_marks_what_the_planner_refuses(context, base_url):
    """Every push, not only in the sampled grid: each refused input marks the fields
    Python names with its messages, and each input some layouts cannot split greys
    the rows Python greys, with its reasons, beside the rows it prices."""
    grid = [
        {**planner_page.DEFAULTS, **change}
        for change in (*planner_page.REFUSED, *planner_page.GREYED)
    ]
    page, seen = visit(context, base_url + PAGE, wait="load")
    got = page.evaluate(DRIVE, typed(grid))
    page.close()
    assert seen.console_errors == []
    for case, result in zip(grid, got, strict=True):
        assert read_back(result) == wanted(case), case
        if "errors" not in result:
            assert shown_as_python(case, result) == [], case


def test_a_reader_changes_the_devices_with_the_keyboard(context, base_url):
    page, _ = visit(context, base_url + PAGE, wait="load")
    rows = page.locator("[data-planner=row]")
    before = rows.count()
    page.focus("input[name=vocab]")
    for _ in range(20):  # Tab through the form to the devices field, as a reader would
        if page.evaluate("document.activeElement.name") == "devices":
            break
        page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.name") == "devices"
    page.keyboard.press("Control+A")
    page.keyboard.type("4")
    assert rows.count() != before
    assert rows.first.get_attribute("data-mesh") == "4,1,1,1"
    summary = page.locator("[data-planner=summary]").text_content()
    assert summary.startswith(f"{rows.count()} of {rows.count()} layouts can split")
    # the formula behind a number opens from the keyboard
    page.focus("[data-planner=row] summary")
    page.keyboard.press("Enter")
    page.wait_for_function(
        "document.querySelector('[data-planner=row] details').open", timeout=2000
    )
    assert page.locator("[data-planner=row] dd").first.is_visible()
    page.close()


def test_a_reader_is_told_what_to_change_beside_the_field(context, base_url):
    page, seen = visit(context, base_url + PAGE, wait="load")
    page.fill("input[name=kv_heads]", "3")
    heads = page.locator("input[name=kv_heads]")
    message = page.locator("#" + heads.get_attribute("aria-describedby"))
    assert message.text_content() == (
        "3 key/value heads do not serve 8 query heads equally: make kv_heads divide heads"
    )
    assert heads.get_attribute("aria-invalid") == "true"
    # the message sits in the field's own box, beside it
    box = page.locator(".planner-field", has=heads)
    assert box.locator(".planner-field-error").text_content() == message.text_content()
    assert page.locator("[data-planner=row]").count() == 0
    page.fill("input[name=kv_heads]", "2")
    assert message.text_content() == "" and heads.get_attribute("aria-invalid") is None
    # the layouts that cannot split 2 key/value heads (a tensor axis of 4 or 8) are
    # greyed, in the layouts' order after the ranked rows, each saying why; the others
    # keep their figures
    want = planner_page.ordered(
        planner_page.answer({**planner_page.DEFAULTS, "kv_heads": 2})["rows"]
    )
    rows = page.locator("[data-planner=row]")
    assert rows.count() == len(want) == 16
    greyed = [r for r in want if not r["valid"]]
    # and the pipeline of 2 stages x fsdp 4, whose microbatches of 2 do not split 4 ways
    assert [r["mesh"][2] for r in greyed] == [8, 4, 4, 1, 4]
    for k, row in enumerate(want):
        assert rows.nth(k).get_attribute("data-valid") == str(row["valid"]).lower()
    shown = page.locator("tr.planner-invalid [data-planner=reason]")
    assert shown.all_text_contents() == [r["reason"] for r in greyed]
    assert greyed[0]["reason"] == (
        "kv_heads 2 does not split 8 ways (tensor): use a multiple of 8"
    )
    page.fill("input[name=layers]", "six")
    assert page.locator("[data-error-for=layers]").text_content() == (
        "layers must be a positive integer, not 'six'"
    )
    # absurd sizes are refused, not rounded: counts a double cannot hold exactly (a
    # message of the script's own: Python's integers have no such limit)
    page.fill("input[name=layers]", "32")
    page.fill("input[name=vocab]", "9" * 17)
    assert page.locator("[data-error-for=model]").text_content() == (
        "these sizes give a count beyond 2^53, which the planner cannot compute exactly "
        "in a browser: use smaller sizes"
    )
    assert page.locator("[data-planner=row]").count() == 0
    page.fill("input[name=vocab]", "32768")
    page.fill("input[name=devices]", "100000")
    assert page.locator("[data-error-for=devices]").text_content() == (
        "devices: the planner lists layouts for up to 65,536 devices"
    )
    page.close()
    assert seen.console_errors == []


def test_greyed_rows_and_marked_fields_pass_axe_in_both_schemes(
    browser, base_url, axe_script
):
    """The site's axe run sees the form as it starts; this one sees a table with greyed
    rows, then a marked field, in the light and the dark scheme."""
    context = browser.new_context(color_scheme="light")
    page, seen = visit(context, base_url + PAGE, wait="load")
    page.add_script_tag(path=str(axe_script))
    found = {}
    for state, field, value in (("greyed", "kv_heads", "2"), ("marked", "heads", "7")):
        page.fill(f"input[name={field}]", value)
        assert page.locator("tr.planner-invalid, [aria-invalid=true]").count() > 0
        for scheme, expected, toggle in (
            ("light", "default", "__palette_1"),
            ("dark", "slate", "__palette_0"),
        ):
            assert scheme_of(page) == expected
            found[state, scheme] = page.evaluate(AXE_RUN, AXE_OPTIONS[scheme])
            page.click(f"label[for='{toggle}']")
    page.close()
    context.close()
    assert seen.console_errors == []
    assert all(v == [] for v in found.values()), found


def test_each_preset_fills_the_form_and_counts_its_parameters(context, base_url):
    """The script's count for each preset is the transformer page's param_count exactly
    and the published figure within 0.5%; the preset's sources are named beside it."""
    from snippets.advanced.transformer import presets
    from snippets.advanced.transformer.model import param_count

    page, seen = visit(context, base_url + PAGE, wait="load")
    count = page.locator("[data-planner=params]")
    source = page.locator("[data-planner=preset-source]")
    assert source.text_content() == ""  # "custom": the form's own sizes
    for name, p in presets.PRESETS.items():
        page.select_option("select[name=preset]", name)
        shown = int(count.get_attribute("data-params"))
        assert shown == param_count(p.config), name
        published = presets.published_count(p)
        assert abs(shown - published) <= 5e-3 * published, name
        assert count.text_content() == f"{shown:,} parameters by the formula below."
        for field, value in planner_page.presets()[name]["fields"].items():
            box = page.locator(f"[name={field}]")
            got = box.is_checked() if isinstance(value, bool) else box.input_value()
            assert got == (value if isinstance(value, bool) else str(value)), field
        links = source.locator("a")
        assert [links.nth(k).get_attribute("href") for k in range(2)] == [
            p.config_source,
            p.published_source,
        ]
        assert source.text_content().startswith(f"{name}: sizes from its config.json")
        assert f"{p.published} parameters as published" in source.text_content()
    # a model field changed away from the preset's makes the menu say "custom"
    page.fill("input[name=layers]", "15")
    assert page.locator("select[name=preset]").input_value() == planner_page.CUSTOM
    assert source.text_content() == ""
    page.close()
    assert seen.console_errors == [] and seen.foreign == []


def test_a_preset_in_the_address_fills_the_form_or_says_what_to_pick(context, base_url):
    from snippets.advanced.transformer import presets
    from snippets.advanced.transformer.model import param_count

    page, seen = visit(context, base_url + PAGE + "?preset=Llama-3.2-1B", wait="load")
    assert page.locator("select[name=preset]").input_value() == "Llama-3.2-1B"
    count = page.locator("[data-planner=params]").get_attribute("data-params")
    assert int(count) == param_count(presets.preset("Llama-3.2-1B"))
    page.close()
    page, seen = visit(context, base_url + PAGE + "?preset=Llama-2-7B", wait="load")
    want = planner_page.answer({**planner_page.DEFAULTS, "preset": "Llama-2-7B"})
    assert (
        page.locator("[data-error-for=preset]").text_content()
        == (want["errors"]["preset"])
    )
    assert page.locator("[data-planner=row]").count() == 0
    page.select_option("select[name=preset]", "Llama-3-8B")
    assert page.locator("[data-error-for=preset]").text_content() == ""
    assert page.locator("[data-planner=row]").count() > 0
    page.close()
    assert seen.console_errors == []


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_without_its_script_the_page_is_a_table_of_examples(browser, base_url, scheme):
    context = browser.new_context(java_script_enabled=False, color_scheme=scheme)
    page, seen = visit(context, base_url + PAGE, wait="load")
    assert page.locator("#planner-app").is_hidden()
    # Each example is a table, and past FOLD rows a fold holding a table of the others.
    tables = page.locator("article table").evaluate_all(
        """(tables) => tables.map((t) => ({
          folded: t.closest("details") !== null,
          head: [...t.querySelectorAll("thead th")].map((c) => c.textContent),
          rows: [...t.querySelectorAll("tbody tr")].map(
            (r) => [...r.querySelectorAll("td")].map((c) => c.textContent.trim())),
        }))"""
    )
    # the table of where the grid lies, below the examples: a row per target and device
    # count, as Python writes it
    grid = [t for t in tables if t["head"][:2] == ["Target", "Devices"]]
    tables = [t for t in tables if t not in grid]
    lines = [
        [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        for line in planner_page.grid_table().splitlines()
        if line.startswith("| ")
    ]
    assert [(t["head"], t["rows"]) for t in grid] == [(lines[0], lines[1:])]
    # the Llama-3-8B recommendations' compiled figures, before the examples' tables
    compiled = [t for t in tables if t["head"][:2] == ["Program", "Figure"]]
    tables = [t for t in tables if t not in compiled]
    lines = [
        [c.strip() for c in line.strip().strip("|").split("|")]
        for line in planner_page.examples_compiled_text().splitlines()
    ]
    assert [(t["head"], t["rows"]) for t in compiled] == [(lines[0], lines[2:])]
    expected = []
    for case in planner_page.examples():
        found = planner_page.ordered(planner_page.answer(case)["rows"])
        shown, rest = planner_page.folded(found)
        for folded, part in ((False, shown), (True, rest)):
            if part:  # every cell, the ranked rows first
                cells = [planner_page.example_cells(r, case["chip"]) for r in part]
                expected.append((folded, cells))
    assert [(t["folded"], t["rows"]) for t in tables] == expected
    assert all(t["head"] == list(planner_page.COLUMNS) for t in tables)
    context.close()
    assert seen.failed == []


def test_a_long_table_folds_past_its_first_rows(context, base_url):
    """64 devices give 49 layouts: the first FOLD (ranked ones first) in the table, the
    others in a fold titled as Python titles it, every row in Python's order."""
    case = {**planner_page.DEFAULTS, "devices": 64, "batch": 64}
    want = planner_page.ordered(planner_page.answer(case)["rows"])
    shown, rest = planner_page.folded(want)
    assert len(want) == 49 and len(shown) == planner_page.FOLD and rest
    page, seen = visit(context, base_url + PAGE, wait="load")
    page.fill("input[name=batch]", "64")
    page.fill("input[name=devices]", "64")
    fold = page.locator("[data-planner=fold]")
    assert fold.count() == 1
    assert fold.locator(":scope > summary").text_content() == planner_page.fold_label(
        rest
    )
    assert not fold.locator("[data-planner=row]").first.is_visible()
    assert fold.locator("[data-planner=row]").count() == len(rest)
    meshes = page.locator("[data-planner=row]").evaluate_all(
        "(rows) => rows.map((r) => r.dataset.mesh)"
    )
    assert meshes == [",".join(map(str, r["mesh"])) for r in want]
    fold.locator(":scope > summary").click()
    assert fold.locator("[data-planner=row]").first.is_visible()
    # no layout of 7 devices splits it: the summary names the nearest counts
    page.fill("input[name=devices]", "7")
    summary = page.locator("[data-planner=summary]").text_content()
    model = planner_page.model_of(case)
    assert summary == pl.no_layout(model, 7) + "."
    page.close()
    assert seen.console_errors == []


def test_a_mesh_the_tpu_slice_refuses_is_greyed_and_gets_no_program(context, base_url):
    """On 64 v5p chips (a 4 x 4 x 4 slice) jax.make_mesh refuses (8, 8, 1): the row is
    greyed with the meshes to use instead, its program is not offered, and on an H100
    node the same mesh is priced again (docs_build/tpu_slices.py)."""
    case = {**planner_page.DEFAULTS, "chip": "v5p", "devices": 64, "batch": 64}
    want = planner_page.answer(case)
    refused = next(r for r in want["rows"] if r["mesh"] == [8, 8, 1, 1])
    page, seen = visit(context, base_url + PAGE, wait="load")
    page.select_option("select[name=chip]", "v5p")
    page.fill("input[name=batch]", "64")
    page.fill("input[name=devices]", "64")
    assert page.locator("[data-planner=slice]").text_content() == want["slice"]
    row = page.locator("tr[data-planner=row][data-mesh='8,8,1,1']")
    assert row.get_attribute("data-valid") == "false"
    assert row.locator("[data-planner=refused]").text_content() == refused["refused"]
    assert page.locator("tr.planner-invalid [data-planner=refused]").count() == 18
    pick = page.locator("[data-planner=program-layout]")
    code = page.locator("[data-planner=program]")
    pick.select_option("8,8,1,1")
    assert code.text_content() == "no program: " + refused["refused"]
    pick.select_option("4,16,1,1")  # a data x fsdp mesh the slice builds
    assert "jax.make_mesh(\n    (4, 16, 1)," in code.text_content()
    page.select_option("select[name=chip]", "h100")
    assert page.locator("[data-planner=slice]").count() == 0
    assert row.get_attribute("data-valid") == "true"
    page.close()
    assert seen.console_errors == []
