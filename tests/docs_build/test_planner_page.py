"""The strategy planner's page (docs_build/planner_page.py): the figures it states about the
compiled grid, its static examples, the constants its script computes with and the compiled
plans it offers, each against docs_build/planner.py. The browser tests compare the script's
figures with planner.py's for a grid of inputs (tests/browser/test_planner.py)."""

import json
import re
from pathlib import Path

import pytest

from docs_build import outputs, planner_page
from docs_build import planner as pl
from docs_build import planner_grid as grid

PAGE = Path(__file__).resolve().parents[2] / "docs" / "tools" / "strategy-planner.md"
GRID = planner_page.compiled()


def filled() -> str:
    return " ".join(planner_page.fill(PAGE.read_text(encoding="utf-8")).split())


def test_every_marker_is_on_the_page_and_filled():
    text = PAGE.read_text(encoding="utf-8")
    for marker in planner_page.MARKERS.values():
        assert text.count(marker) == 1, marker
    assert "<!-- planner:" not in filled()


def test_the_page_states_the_tolerance_the_grid_and_the_largest_disagreement():
    text = filled()
    assert f"within {pl.TOLERANCE:.0%}." in text
    assert f"for {len(GRID['entries'])} programs" in text
    # the largest disagreement, computed here from the grid as the tests of planner.py do
    largest = {"state": 0.0, "wire": 0.0}
    for e in GRID["entries"]:
        model, layout = pl.model_of(GRID, e["config"]), pl.entry_layout(e)
        backend = "cpu" if e["target"] == "cpu" else "tpu"
        state = pl.state_bytes(model, layout, backend)
        wire = pl.wire_bytes(model, layout, pl.plan_of(e, model))
        compiled_wire = sum(s["wire_bytes"] for s in e["summary"].values())
        for k, ours, theirs in (
            ("state", state, e["memory"]["argument_bytes"]),
            ("wire", wire, compiled_wire),
        ):
            largest[k] = max(largest[k], abs(ours - theirs) / theirs)
    assert 0 < max(largest.values()) <= pl.TOLERANCE
    assert (
        f"The largest disagreement found is {largest['state']:.2%} for the state and "
        f"{largest['wire']:.2%} for the wire bytes" in text
    )


def test_the_prose_describes_the_grid_as_it_is():
    text = filled()
    assert len(GRID["configs"]) == 4 and len(grid.MESHES) == 6 and grid.DEVICES == 8
    assert "four model sizes, six meshes of eight devices" in text
    tpus = [t for t in GRID["targets"] if t != "cpu"]
    assert [t.split(":")[0] for t in tpus] == ["v5e", "v5p"]
    assert "for the CPU backend and for two TPU targets (v5e and v5p)" in text
    assert pl.CHECKED_OPTIMIZERS == ("adamw",) and pl.CHECKED_PARAM_BYTES == (pl.F32,)
    assert "other than AdamW or parameters in bfloat16" in text


def test_the_plans_are_what_the_prose_says():
    plans = planner_page.plans()
    assert list(plans) == ["textbook", *GRID["targets"]]
    text = filled()
    # textbook: bf16 copies gathered, bf16 gradients reduce-scattered, bf16 activations
    assert plans["textbook"] == pl.Plan(
        gather=2, gradients=2, activations=2, scatter=pl.MATRICES
    )
    assert (
        "bfloat16 copies gathered, gradients summed with reduce-scatters in bfloat16"
        in text
    )
    # the CPU gathers, sums activations and gradients in float32, all-reduces every gradient
    assert plans["cpu"] == pl.Plan(gather=4, gradients=4, activations=4, scatter=())
    assert plans["cpu"].departures() == [
        "gather in f32, not bf16",
        "gradients in f32, not bf16",
        "activations in f32, not bf16",
        "gradients of qkv, out, mlp, mlp, head all-reduced over data x fsdp, not "
        "scattered",
    ]
    # TPUs sum gradients in bfloat16, as the step asks, and scatter fewer of them
    for target in GRID["targets"][1:]:
        assert plans[target].gradients == 2
        assert plans[target].departures()[0].startswith("gradients of ")
    assert plans["v5e:2x4"].scatter == ("mlp", "head")
    assert plans["v5p:2x2x2"].scatter == ()
    assert "v5e all but one MLP matrix per block and the head, v5p all of them." in text


@pytest.mark.parametrize("target", GRID["targets"])
def test_a_targets_plan_prices_each_planner_layout_as_its_own_program(target):
    """The plan offered for a target, put together from three of its programs, gives the
    same wire bytes as each program's own plan for every layout the planner lists (for the
    page's size: a plan read at another size may differ)."""
    model = pl.model_of(GRID, planner_page.PLAN_CONFIG)
    plan = planner_page.plans()[target]
    listed = {lay.mesh for lay in pl.layouts(grid.DEVICES, stages=False)}
    checked = 0
    for e in GRID["entries"]:
        if (e["target"], e["config"]) != (target, planner_page.PLAN_CONFIG):
            continue
        if tuple(e["mesh"]) not in listed:
            continue
        layout = pl.entry_layout(e)
        own = pl.wire_bytes(model, layout, pl.plan_of(e, model))
        assert pl.wire_bytes(model, layout, plan) == own
        compiled_wire = sum(s["wire_bytes"] for s in e["summary"].values())
        assert own == pytest.approx(compiled_wire, rel=pl.TOLERANCE)
        checked += 1
    assert checked == 5  # data, FSDP, tensor and the two 2-D meshes of 8 devices


def test_the_static_examples_are_what_the_planner_gives():
    tables = [
        t for t in planner_page.fill(PAGE.read_text()).split("\n\n") if "|---" in t
    ]
    assert len(tables) == len(planner_page.EXAMPLES)
    for table, case in zip(tables, planner_page.EXAMPLES, strict=True):
        model = planner_page.model_of(case)
        rows = pl.plan_table(
            model,
            case["devices"],
            case["memory"] * 2**30,
            planner_page.plans()[case["plan"]],
            case["backend"],
        )
        lines = table.splitlines()[2:]
        assert len(lines) == len(pl.layouts(case["devices"]))
        for line, row in zip(
            lines[: len(rows)], rows, strict=True
        ):  # then the left out
            cells = [c.strip() for c in line.strip("|").split("|")]
            assert cells == [
                row.layout.name,
                planner_page.mesh_text([*row.layout.mesh, row.layout.stages]),
                planner_page.size_text(row.state),
                "yes" if row.fits else "no",
                planner_page.size_text(row.wire),
                "checked" if row.checked else "modelled",
            ]
        for line in lines[len(rows) :]:
            name, reason = [c.strip() for c in line.strip("|").split("|")][:2]
            layout = next(
                lay for lay in pl.layouts(case["devices"]) if lay.name == name
            )
            with pytest.raises(pl.CostModelError) as err:
                pl.check(model, layout)
            assert reason == f"left out: {err.value}"
    # the first example is the form's starting point; both show a row that does not fit
    assert planner_page.EXAMPLES[0] is planner_page.DEFAULTS
    for case in planner_page.EXAMPLES:
        assert any(not r["fits"] for r in planner_page.answer(case)["rows"])


def test_the_scripts_constants_are_the_planners():
    text = planner_page.fill(PAGE.read_text())
    found = re.search(
        r'<script type="application/json" id="planner-data">(.*?)</script>', text
    )
    data = json.loads(found.group(1))
    assert data["optimizers"] == {k: list(v) for k, v in pl.OPTIMIZERS.items()}
    assert data["formulas"] == pl.FORMULAS
    assert data["tpu"] == {
        "minor": pl.TPU_MINOR,
        "second": pl.TPU_SECOND,
        "scalar": pl.TPU_SCALAR,
    }
    assert tuple(data["matrices"]) == pl.MATRICES
    for name, plan in planner_page.plans().items():
        got = data["plans"][name]
        assert (
            pl.Plan(
                got["gather"],
                got["gradients"],
                got["activations"],
                tuple(got["scatter"]),
            )
            == plan
        )
        assert got["departures"] == plan.departures()
    assert data["defaults"] == planner_page.DEFAULTS
    assert "<" not in found.group(1)  # nothing in it can end the script element


def test_the_page_has_no_python_and_so_no_notebook():
    assert outputs.page_blocks(PAGE) == []


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0 bytes"),
        (1023.5, "1,024 bytes"),
        (1024, "1.00 KiB"),
        (1.125 * 2**30, "1.13 GiB"),  # half up, as the script rounds
        (99.95 * 2**20, "100.0 MiB"),
        (1536 * 2**40, "1.50 PiB"),
        (3000 * 2**50, "3,000 PiB"),
    ],
)
def test_sizes_are_written_in_binary_units(n, text):
    assert planner_page.size_text(n) == text


def test_refused_inputs_get_the_planners_messages():
    for change in planner_page.REFUSED:
        found = planner_page.answer({**planner_page.DEFAULTS, **change})
        assert set(found) == {"error"}
    assert planner_page.answer({**planner_page.DEFAULTS, "heads": 7}) == {
        "error": "d_model 1024 does not split into 7 heads: make d_model a multiple of heads"
    }
