"""The strategy planner's page (docs_build/planner_page.py): the figures it states about the
compiled grid, its static examples, the constants its script computes with and the compiled
plans it offers, each against docs_build/planner.py. The browser tests compare the script's
figures with planner.py's for a grid of inputs (tests/browser/test_planner.py)."""

import dataclasses
import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from docs_build import outputs, planner_page, planner_program
from docs_build import planner as pl
from docs_build import planner_grid as grid
from docs_build import transformer_cost as tc

PAGE = Path(__file__).resolve().parents[2] / "docs" / "tools" / "strategy-planner.md"
GRID = planner_page.compiled()
ENTRIES_BY_KEY = {
    (e["target"], e["config"], tuple(e["mesh"])): e for e in GRID["entries"]
}
# The 8-device targets, whose programs the offered plans are read from.
EIGHT = [t for t in GRID["targets"] if t in grid.TARGETS]


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
    # but the programs the model cannot read, which the page names with their own gaps
    # (tests/docs_build/test_planner.py holds the list)
    unread = {(e["target"], tuple(e["mesh"])) for e in planner_page.unmodelled()}
    assert unread == {("v5e:16x16", (1, 256, 1))}
    x = planner_page.TIMES
    assert (
        "the wire formula misses it even under its own plan: TPU v5e:16x16 on 1 "
        f"{x} 256 {x} 1 (many heads, gated: the formula 2.9% short of its bytes)."
    ) in text
    assert "One program follows a plan the model cannot read" in text
    assert "libtpu sends FSDP's weights as all-reduces of the whole weight" in text
    for e in GRID["entries"]:
        if (e["target"], tuple(e["mesh"])) in unread:
            continue
        model, layout = pl.model_of(GRID, e["config"]), pl.entry_layout(e)
        state = pl.state_bytes(model, layout, planner_page.backend_of(e["target"]))
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
    assert len(grid.CONFIGS) == 4 and len(grid.MESHES) == 6 and grid.DEVICES == 8
    assert "On eight devices: four model sizes, six meshes each" in text
    others = [t for t in EIGHT if t != "cpu"]
    assert [t.split(":")[0] for t in others] == ["v5e", "v5p", "h100"]
    assert "h100:1x8" in EIGHT
    assert (
        "for the CPU backend; for two TPU targets (v5e and v5p) the transformer page's "
        "size, and on v5e the Llama-style one too; for one node of eight H100 GPUs every "
        "size but the smallest." in text
    )
    sizes = {t: list(grid.configs_of(t)) for t in EIGHT}
    assert sizes["cpu"] == list(grid.CONFIGS)
    assert sizes["v5p:2x2x2"] == [planner_page.PLAN_CONFIG]
    assert sizes["v5e:2x4"] == [LLAMA_STYLE, planner_page.PLAN_CONFIG]
    assert sizes["h100:1x8"] == [c for c in grid.CONFIGS if c != "tiny"]
    assert grid.CONFIGS["wide, no remat"][0]["remat"] is False
    # beyond eight devices: one size, seven layouts, on the targets the prose names
    assert len(grid.LARGE_CONFIGS) == 1
    assert {grid.devices_of(t): t for t in grid.LARGE if t.startswith("v5")} == {
        64: "v5p:4x4x4",
        256: "v5e:16x16",
    }
    assert {t: n for t, n in grid.LARGE.items() if t.startswith("h100")} == {
        "h100:2x8": 16,
        "h100:8x8": 64,
    }
    assert all(len(grid.meshes_of(t)) == 7 for t in grid.LARGE)
    assert (
        "Beyond eight: one more size, on one mesh of each of the seven kinds the planner "
        "ranks, for a slice of 64 TPU v5p chips, a pod of 256 v5e chips, and 2 and 8 "
        "nodes of eight H100s (16 and 64 GPUs), and the two Llama-3-8B programs of the "
        "examples." in text
    )
    assert set(grid.EXAMPLE_MESHES) == {
        ("h100:8x8", "Llama-3-8B"),
        ("v5p:4x4x4", "Llama-3-8B"),
    }
    assert pl.CHECKED_OPTIMIZERS == ("adamw",) and pl.CHECKED_PARAM_BYTES == (pl.F32,)
    assert "AdamW on float32 weights (all the grid compiled)" in text
    # the plans offered were read at the page's size: the v5e plan misses the FSDP
    # program of the other size it compiles, the H100 plan four of the Llama-style size's
    names = FORM_ALL
    unheld = [
        p
        for p in planner_page.coverage()["programs"]
        if not p[-1] and names[p[0]] in grid.CONFIGS
    ]
    assert {(names[p[0]], tuple(p[1:4]), p[4]) for p in unheld} == MISSED
    assert len(unheld) == 10 and "the FSDP program of the Llama-style size" in text
    assert (
        "the H100 plan misses four of the five other layouts of the Llama-style size"
        in text
    )
    assert "Both miss the 3-D program, (2, 2, 2), of every size" in " ".join(
        text.split()
    )
    assert "one of that chip's sizes on eight devices, or the larger size" in text
    # the two-axis layouts with FSDP are listed but not compiled; the 3-D (2, 2, 2) is
    # listed and compiled
    listed = {lay.mesh for lay in pl.layouts(grid.DEVICES, stages=False)}
    with_fsdp = {m for m in listed if m[1] > 1 and m[0] * m[2] > 1 and 1 in m}
    assert with_fsdp and not with_fsdp & set(grid.MESHES)
    assert (2, 2, 2) in grid.MESHES and (2, 2, 2) in listed
    assert "say that they are extrapolated to their mesh" in " ".join(text.split())
    # and a compiler may plan differently for more devices: the MLP's FSDP step on v5e
    tpu = json.loads(
        (
            PAGE.parents[2] / "docs_build" / "compiled" / "results" / "tpu.json"
        ).read_text()
    )
    fsdp = {
        p["target"]: set(p["summary"])
        for p in tpu["programs"]
        if p["strategy"] == "FSDP"
    }
    assert "all-gather" in fsdp["v5e:2x4"] and fsdp["v5e:8x8"] == {"all-reduce"}
    assert "all-gathers on 8 v5e chips and with all-reduces on 64" in text


def test_the_plans_are_what_the_prose_says():
    plans = planner_page.plans()
    assert list(plans) == ["textbook", *EIGHT]
    text = filled()
    # textbook: bf16 copies gathered, bf16 gradients reduce-scattered, bf16 activations
    assert (
        plans["textbook"]
        == pl.TEXTBOOK
        == pl.Plan(gather=2, gradients=2, activations=2)
    )
    assert pl.TEXTBOOK.scattered(planner_page.FORM_MODEL) == list(pl.MATRICES)
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
        "every gradient all-reduced over data x fsdp, not scattered",
    ]
    # TPUs sum gradients in bfloat16, as the step asks, scatter fewer of them, and add
    # the input gradients that share an input before summing them
    for target in EIGHT[1:]:
        assert plans[target].gradients == 2
        assert plans[target].input_sums == 2 < pl.input_sums(planner_page.FORM_MODEL)
    assert plans["cpu"].input_sums is None  # one all-reduce per matrix group: 3
    assert plans["v5e:2x4"].scatter == (pl.QO, "mlp", "head")
    assert plans["v5p:2x2x2"].scatter == ()
    said = " ".join(text.split())
    assert (
        "v5e those of k and v, of one of q and out and of one MLP matrix per block, v5p "
        "all of them" in said
    )
    assert "two all-reduces per block where the CPU runs three" in said
    # the H100 plan: the textbook's gathers and scatters in bfloat16, but the head gathered
    # in float32, all but one block matrix regathered in float32, bfloat16 block sums
    h100 = plans["h100:1x8"]
    assert (h100.gather, h100.gradients, h100.input_sums) == (2, 2, 2)
    assert h100.scatter == tuple(sorted(pl.MATRICES, key=pl.LARGEST.index))
    assert h100.head_gather == 4 and h100.block_sum == 2
    assert len(h100.regather) == len(pl.MATRICES) - 2  # all block matrices but one
    assert (
        "adds them up as the TPUs do and scatters the gradients in bfloat16 as the step "
        "asks, but gathers the output head in float32, gathers all but one of each block's "
        "matrices a second time in float32 for the backward pass, and sums each block's "
        "attention output in bfloat16" in said
    )


@pytest.mark.parametrize("target", EIGHT)
def test_a_targets_plan_prices_each_planner_layout_as_its_own_program(target):
    """The plan offered for a target, put together from three of its programs, gives the
    same wire bytes as each program's own plan for every layout the planner lists (for the
    page's size: a plan read at another size may differ), but the (2, 2, 2) mesh on v5e and
    the H100, whose programs depart from it (their rows say so: MISSED)."""
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
        compiled_wire = sum(s["wire_bytes"] for s in e["summary"].values())
        assert own == pytest.approx(compiled_wire, rel=pl.TOLERANCE)
        offered = pl.wire_bytes(model, layout, plan)
        missed = ("page", layout.mesh, target) in MISSED
        assert (offered == own) is not missed
        assert (
            abs(offered - compiled_wire) <= pl.TOLERANCE * compiled_wire
        ) is not missed
        checked += 1
    # data, FSDP, tensor, the two 2-D meshes and the 3-D one of 8 devices
    assert checked == 6


def test_the_static_examples_are_what_the_planner_gives():
    page = planner_page.fill(PAGE.read_text()).split("## How the figures")[0]
    # each example's table follows its bold title (the compiled programs' table, before
    # the first title, is examples_compiled_text's)
    examples = page.split("## Examples")[1]
    tables = [t for t in examples.split("**")[1:] if "|---" in t]
    assert len(tables) == len(planner_page.examples()) == 3
    folds = refused = 0
    for table, case in zip(tables, planner_page.examples(), strict=True):
        model = planner_page.model_of(case)
        figures = {
            r.layout: r
            for r in pl.plan_table(
                model,
                case["devices"],
                case["memory"] * 2**30,
                planner_page.plans()[case["plan"]],
                case["backend"],
            )
        }
        # the first FOLD rows in the table, the others in a fold below it, titled with
        # how many it holds and how many of them are greyed
        open_, _, rest = table.partition("??? note ")
        lines = [line.strip() for line in open_.splitlines() if line.startswith("|")]
        rows = planner_page.ordered(planner_page.answer(case)["rows"])
        assert len(rows) == len(pl.layouts(case["devices"]))
        assert len(lines) - 2 == min(len(rows), planner_page.FOLD)
        if rest:
            folds += 1
            title, *more = rest.splitlines()
            hidden = rows[planner_page.FOLD :]
            assert title == (
                f'"The other {len(hidden)} layouts '
                f"({sum(not r['valid'] for r in hidden)} of them greyed, each saying "
                'why)"'
            )
            more = [line.strip() for line in more if line.strip().startswith("|")]
            assert more[:2] == lines[:2]
            lines += more[2:]
        assert len(lines) - 2 == len(rows)
        for line, r in zip(lines[2:], rows, strict=True):
            cells = [c.strip() for c in line.strip("|").split("|")]
            assert cells == planner_page.example_cells(r, case["chip"])
            if not r["valid"]:
                # what the model needs, then what the TPU slice's make_mesh does
                said = [f"cannot split this model: {r['reason']}"] * bool(r["reason"])
                if "refused" in r:
                    said.append(f"not on this slice: {r['refused']}")
                    refused += 1
                assert cells[-1] == "; ".join(said)
                continue
            layout = next(
                lay
                for lay in figures
                if lay.name == r["layout"] and [*lay.mesh, lay.stages] == r["mesh"]
            )
            assert cells[3] == planner_page.size_text(figures[layout].state)
            assert cells[7] == planner_page.size_text(figures[layout].wire)
            if layout.stages > 1:
                assert planner_page.LABELS["no temporaries"] in cells
                continue
            backend = planner_page.chip_facts(case["chip"])["backend"]
            temp = tc.temp_bytes(model, layout, backend)
            assert cells[5] == planner_page.size_text(temp)
            bound = tc.time_bound(
                model,
                layout,
                case["chip"],
                planner_page.chip_facts(case["chip"])["per_node"],
                planner_page.plans()[case["plan"]],
            )
            assert cells[8] == planner_page.time_text(bound.compute)
            assert cells[10] == (
                f"{planner_page.time_text(bound.perfect_overlap)}, "
                f"{planner_page.time_text(bound.no_overlap)}"
            )
    # the first example is the form's starting point; each shows a row that does not fit
    # and ranked rows; Llama-3-8B's rows cannot split 8 key/value heads over 16 or more
    assert folds == 2  # 64 devices: 49 layouts
    # the v5p example greys the 18 meshes make_mesh refuses on the 4 x 4 x 4 slice
    assert refused == 18
    assert planner_page.examples()[0] is planner_page.DEFAULTS
    for case in planner_page.examples():
        rows = planner_page.answer(case)["rows"]
        assert any(r["valid"] and not r.get("total_fits", True) for r in rows)
        assert any(r["rank"] for r in rows)
    second = planner_page.answer(planner_page.examples()[1])["rows"]
    unsplit = [r for r in second if r.get("reason") and r["mesh"][3] == 1]
    assert {r["mesh"][2] for r in unsplit} == {16, 32, 64}


def test_rows_that_fit_are_ranked_by_the_overlapped_bound():
    for case in planner_page.examples():
        rows = planner_page.ordered(planner_page.answer(case)["rows"])
        ranked = [r for r in rows if r["rank"]]
        assert [r["rank"] for r in ranked] == list(range(1, len(ranked) + 1))
        assert rows[: len(ranked)] == ranked  # ranked rows first
        times = [r["time"]["perfect_overlap"] for r in ranked]
        assert times == sorted(times)
        for r in rows[len(ranked) :]:  # the others: no time, or not fitting
            assert not r["valid"] or not r.get("total_fits") or "why" in r["time"]
            assert r["total"] > case["memory"] * 2**30 if r.get("total") else True


def test_a_row_fits_only_with_its_temporaries():
    case = planner_page.DEFAULTS
    rows = planner_page.answer(case)["rows"]
    # a layout whose state fits and whose temporaries push it over
    over = [
        r for r in rows if r["valid"] and r["fits"] and r.get("total_fits") is False
    ]
    assert over
    for r in over:
        assert r["total"] == r["state"] + r["temporaries"]
        assert planner_page.room_text(r) == (
            f"does not fit by {planner_page.size_text(r['total'] - 2**30)}"
        )


def test_the_time_says_why_where_it_has_none():
    rows = planner_page.answer({**planner_page.DEFAULTS, "chip": "cpu"})["rows"]
    assert {r["time"]["why"] for r in rows if r["valid"] and r["mesh"][3] == 1} == {
        planner_page.LABELS["no peak"]
    }
    rows = planner_page.answer({**planner_page.DEFAULTS, "optimizer": "sgd"})["rows"]
    assert all(
        "measured for ['adamw']" in r["time"]["why"]
        for r in rows
        if r["valid"] and r["mesh"][3] == 1
    )
    # a pipeline's row has no temporaries, and its time is refused for the same reasons
    pipeline = [r for r in rows if r["mesh"][3] > 1 and r["valid"]]
    assert pipeline and all(
        "measured for ['adamw']" in r["time"]["why"] and "temporaries" not in r
        for r in pipeline
    )


def test_the_page_quotes_the_real_h100_step_and_where_temporaries_hold():
    text = filled()
    bound, measured, _ = tc.card_step_bound()
    assert bound < measured
    said = (
        f"took {planner_page.time_text(measured)} where this bound is "
        f"{planner_page.time_text(bound)}"
    )
    assert said == "took 65.8 ms where this bound is 17.8 ms"
    assert said in text
    # on one node of 8 H100s and on the larger size's programs on 16 and 64 H100s
    assert (
        f"checked on CPU within {tc.TOLERANCE['cpu']:.0%}; checked on H100 within "
        f"{tc.TOLERANCE['gpu']:.0%} on 8, 16 and 64 GPUs; unchecked on TPU" in text
    )
    for chip, where in (
        ("v5e", "unchecked on TPU"),
        ("h100", "checked on H100 within"),
    ):
        assert where in planner_page.chip_note(chip)


def test_the_tpu_sentence_says_what_transformer_cost_unchecked_establishes():
    """The page's reason for leaving TPU temporaries unchecked is UNCHECKED's: the program
    it names reports fewer bytes of temporaries than the layer inputs its step keeps."""
    target, config, mesh = planner_page.TPU_UNCHECKED
    reason = tc.UNCHECKED["tpu"]
    assert target in reason and str(mesh) in reason and config.split(",")[0] in reason
    entry = ENTRIES_BY_KEY[planner_page.TPU_UNCHECKED]
    kept = tc.residual_bytes(pl.model_of(GRID, config), pl.entry_layout(entry))
    temp, mib = entry["memory"]["temp_bytes"], 2**20
    assert temp < kept["layers"]
    assert f"{temp / mib:.1f} MiB of temporaries" in reason
    assert f"{kept['layers'] / mib:.0f} MiB of layer inputs" in reason
    said = planner_page.tpu_temporaries()
    assert said == (
        f"On TPU v5e (v5e:2x4), the grid's Llama-style size on the mesh 1 \u00d7 1 \u00d7 8 "
        f"reports {planner_page.size_text(temp)} of temporaries, fewer than the "
        f"{planner_page.size_text(kept['layers'])} of layer inputs its step keeps for the "
        "backward pass: they do not count what the formula counts, so the formula is not "
        "held to TPU programs"
    )
    assert f"unchecked on TPU. {said}. *State + temporaries*" in filled()
    assert "on-chip" not in filled()  # a cause no measurement here shows
    # the Llama-style size is the grid's gqa config
    assert GRID["configs"][config]["kv_heads"] < GRID["configs"][config]["heads"]


def test_the_compute_bound_threshold_is_where_compute_passes_the_networks():
    """Per row with a time: the step's own sequences per device above the threshold make
    compute the bound, below it a network; both bounds are straight lines in the batch."""
    seen = set()
    examples = planner_page.examples()
    for case in (*examples, *planner_page.cases()[::9]):
        found = planner_page.answer(case)
        model = planner_page.model_of(case) if "rows" in found else None
        for r in found.get("rows", []):
            t = r.get("time", {})
            if "compute_bound" not in t:
                continue
            a, f, _, _ = r["mesh"]
            held = case["batch"] // (a * f)
            threshold = t["compute_bound"]
            seen.add(planner_page.bound_text(threshold))
            longest = max(t["networks"].values())
            if threshold == math.inf:
                assert longest > t["compute"]
            elif held > threshold * 1.01:
                assert t["compute"] >= longest, (case, r)
            elif held < threshold * 0.99:
                assert t["compute"] < longest, (case, r)
            if case in examples:  # the lines, on the examples' rows
                layout = next(
                    lay
                    for lay in pl.layouts(case["devices"])
                    if [*lay.mesh, lay.stages] == r["mesh"]
                )
                facts = planner_page.chip_facts(case["chip"])
                times = [
                    tc.time_bound(
                        dataclasses.replace(model, batch=b * a * f, microbatches=1),
                        layout,
                        case["chip"],
                        facts["per_node"],
                        planner_page.plans()[case["plan"]],
                    )
                    for b in (1, 2, 3)
                ]
                for k in ("compute", *t["networks"]):
                    y = [b.compute if k == "compute" else b.networks[k] for b in times]
                    assert y[2] - y[1] == pytest.approx(
                        y[1] - y[0], rel=1e-9, abs=1e-15
                    )
    assert {"never", "any"} < seen


def test_a_layout_is_never_compute_bound_only_through_its_activation_sums():
    """On the form's starting point the rows that are never compute-bound split the
    tensor axis, and of their wire terms only the activation sums grow with the batch."""
    case = planner_page.DEFAULTS
    never = [
        r
        for r in planner_page.answer(case)["rows"]
        if r.get("time", {}).get("compute_bound") == math.inf
    ]
    assert never and all(r["mesh"][2] > 1 for r in never)
    model = planner_page.model_of(case)
    double = dataclasses.replace(model, batch=2 * model.batch)
    for r in never:
        layout = next(
            lay for lay in pl.layouts(8) if [*lay.mesh, lay.stages] == r["mesh"]
        )
        one, two = pl.wire_terms(model, layout), pl.wire_terms(double, layout)
        grow = [k for k in one if one[k] != two[k]]
        # a pipeline's stage boundary sends grow with the batch too, but slower than
        # its FLOPs: its activation sums over tensor decide
        assert grow in (["activations"], ["pipeline wire", "stage activations"])
    # and the rows that do not split the tensor axis have a threshold
    assert all(
        r["time"]["compute_bound"] < math.inf
        for r in planner_page.answer(case)["rows"]
        if "compute_bound" in r.get("time", {}) and r["mesh"][2] == 1
    )


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
    models = {"plain": planner_page.FORM_MODEL, "gated": planner_page.GATED_MODEL}
    assert data["mlps"] == {
        kind: {"matrices": list(pl.matrices(m)), "input_sums": pl.input_sums(m)}
        for kind, m in models.items()
    }
    assert data["mlps"]["plain"]["matrices"] == list(pl.MATRICES)
    for name, plan in planner_page.plans().items():
        got = data["plans"][name]
        fields = {f.name for f in dataclasses.fields(pl.Plan)}
        assert (
            pl.Plan(
                **{
                    k: tuple(v) if isinstance(v, list) else v
                    for k, v in got.items()
                    if k in fields
                }
            )
            == plan
        )
        assert set(got) == fields | {"label", "departures"}
        assert got["departures"] == {k: plan.departures(m) for k, m in models.items()}
    assert data["defaults"] == planner_page.DEFAULTS
    assert data["presets"] == json.loads(json.dumps(planner_page.presets()))
    assert data["coverage"] == json.loads(json.dumps(planner_page.coverage()))
    assert "<" not in found.group(1)  # nothing in it can end the script element


@pytest.mark.parametrize(
    ("fraction", "text"),
    [(0.8441, "84.4%"), (0.05, "5.00%"), (0.0035, "0.35%"), (1e-6, "0.00%")],
)
def test_percentages_below_one_are_written_in_hundredths(fraction, text):
    assert planner_page.percent_text(fraction) == text


@pytest.mark.parametrize(
    ("sequences", "text"),
    [
        (math.inf, "never"),
        (0.0, "any"),
        (0.99, "any"),
        (1.0, "1.00"),
        (1234.5, "1,235"),
    ],
)
def test_the_compute_bound_threshold_in_words(sequences, text):
    assert planner_page.bound_text(sequences) == text


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


def test_refused_inputs_get_the_planners_messages_field_by_field():
    for change in planner_page.REFUSED:
        found = planner_page.answer({**planner_page.DEFAULTS, **change})
        assert set(found) == {"errors"}
        assert set(found["errors"]) <= set(change) | {"heads", "kv_heads"}
    assert planner_page.answer({**planner_page.DEFAULTS, "heads": 7}) == {
        "errors": {
            "heads": "d_model 1024 does not split into 7 heads: make d_model a multiple "
            "of heads",
            "kv_heads": "8 key/value heads do not serve 7 query heads equally: make "
            "kv_heads divide heads",
        }
    }
    found = planner_page.answer(
        {**planner_page.DEFAULTS, "heads": 2.5, "vocab": -5, "seq": "six", "memory": 0}
    )
    assert found == {
        "errors": {
            "vocab": "vocab must be a positive integer, not -5",
            "heads": "heads must be a positive integer, not 2.5",
            "seq": "seq must be a positive integer, not 'six'",
            "memory": "memory per device must be a positive number of GiB, not 0",
        }
    }
    assert planner_page.answer({**planner_page.DEFAULTS, "preset": "Llama-9"}) == {
        "errors": {
            "preset": "No preset 'Llama-9': pick one of ['Llama-3-70B', 'Llama-3-8B', "
            "'Llama-3.2-1B']."
        }
    }


def test_a_layout_that_cannot_split_the_model_is_greyed_and_the_rest_stand():
    """Microbatches that do not divide the batch grey the pipeline's row only, saying what
    to change; every other row keeps its figures (the whole table went blank before)."""
    default = planner_page.answer(planner_page.DEFAULTS)["rows"]
    found = planner_page.answer({**planner_page.DEFAULTS, "microbatches": 5})["rows"]
    meshes = [i for i, r in enumerate(default) if r["mesh"][3] == 1]
    assert [found[i] for i in meshes] == [default[i] for i in meshes]
    pipelines = [r for r in found if r["mesh"][3] > 1]
    assert len(pipelines) == 6 and pipelines[0] == {
        "layout": "pipeline",
        "mesh": [1, 1, 1, 8],
        "rank": None,
        "valid": False,
        "reason": "a batch of 16 does not cut into 5 microbatches: use a number of "
        "microbatches that divides it",
    }
    assert all(
        not r["valid"] and "does not cut into 5 microbatches" in r["reason"]
        for r in pipelines
    )
    # every greyed case keeps a row per layout, each either priced or told what to change
    for change in planner_page.GREYED:
        case = {**planner_page.DEFAULTS, **change}
        rows = planner_page.answer(case)["rows"]
        assert [(r["layout"], r["mesh"]) for r in rows] == [
            (lay.name, [*lay.mesh, lay.stages]) for lay in pl.layouts(case["devices"])
        ]
        greyed = [r for r in rows if not r["valid"]]
        assert greyed, change
        for r in greyed:
            if r["reason"]:
                assert ": use a" in r["reason"] or ": make" in r["reason"], r
            if "refused" in r:  # a mesh the TPU slice's make_mesh refuses
                assert ": use data" in r["refused"] or ": use fsdp" in r["refused"], r
            assert r["reason"] or r["refused"], r
    # no layout of 6 devices splits the page's model: every row greyed, and the page
    # names the nearest device counts that some layout can use
    none = planner_page.answer({**planner_page.DEFAULTS, "devices": 6})
    assert none["rows"] and not any(r["valid"] for r in none["rows"])
    assert none["none"] == pl.no_layout(planner_page.model_of(planner_page.DEFAULTS), 6)
    assert "use 4 or 8 devices" in none["none"]
    assert "none" not in planner_page.answer(planner_page.DEFAULTS)


def rows_of(case: dict) -> list[dict]:
    return planner_page.answer(case)["rows"]


def test_the_textbook_default_has_no_checked_row():
    """The textbook plan is no target's: the form's starting point checks nothing."""
    case = planner_page.DEFAULTS
    assert case["plan"] == "textbook"
    rows = [r for r in rows_of(case) if r["valid"]]
    assert not any(r["checked"] for r in rows)
    extrapolated = (
        "extrapolated from the 8-device CPU, TPU v5e:2x4, TPU v5p:2x2x2, GPU h100:1x8 "
        "programs of the 4 compiled sizes to the textbook plan"
    )
    # ten meshes; the pipelines that divide the page's model (a microbatch of 2
    # sequences splits over fsdp 2, not 4)
    assert [r["basis"] for r in rows] == [extrapolated] * 10 + [
        "the planner's model, not compiled: the grid compiles data, fsdp and tensor "
        "meshes only"
    ] * 5


def test_the_large_examples_are_checked_only_where_compiled():
    """Llama-3-8B on 64 devices: the grid compiled each example's first-ranked program at
    full size, so that row is checked, on 64 H100s and on 64 v5p chips (under the v5p
    plan, which takes from the 64-chip programs that an fsdp axis of 64 all-reduces the
    weights); every other row says it is extrapolated, and from which compiled point."""
    case = planner_page.examples()[1]
    assert (case["devices"], case["plan"], case["preset"]) == (
        64,
        "v5p:2x2x2",
        "Llama-3-8B",
    )
    rows = [r for r in rows_of(case) if r["valid"] and r["mesh"][3] == 1]
    checked = [r for r in rows if r["checked"]]
    assert [(r["mesh"], r["rank"]) for r in checked] == [([1, 64, 1, 1], 1)]
    assert checked[0]["basis"] == "checked against the compiled TPU v5p:4x4x4 program"
    at = (
        "extrapolated from the 64-device TPU v5p:4x4x4 programs of the 2 compiled sizes"
    )
    assert {r["basis"] for r in rows if r["mesh"][:3] != [1, 64, 1]} == {
        f"{at} to this mesh"
    }
    assert planner_page.plans()["v5p:2x2x2"].all_reduced_fsdp == (64,)
    text = filled()
    first = planner_page.examples()[0]["plan"]
    assert (
        f"The first prices the {first} plan, so no compiled program checks it" in text
    )
    third = planner_page.examples()[2]
    assert (third["devices"], third["plan"], third["chip"]) == (64, "h100:1x8", "h100")
    checked = [r for r in rows_of(third) if r["valid"] and r["checked"]]
    assert [(r["mesh"], r["rank"]) for r in checked] == [([1, 32, 2, 1], 1)]
    assert checked[0]["basis"] == "checked against the compiled GPU h100:8x8 program"


def test_the_page_shows_where_the_grid_lies():
    """A row per target and device count, a column per size, each cell the layouts the
    grid compiled there (counted here from the grid's entries), on the page."""
    table = planner_page.grid_table()
    names = list(GRID["configs"])
    seen = {}
    for line in table.splitlines():
        if not line.startswith("| ") or line.startswith("| Target"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        seen[cells[0], int(cells[1])] = dict(zip(names, cells[2:], strict=True))
    expected = {}
    for e in GRID["entries"]:
        key = (planner_page.target_label(e["target"]), math.prod(e["mesh"]))
        per = expected.setdefault(key, dict.fromkeys(names, 0))
        per[e["config"]] += 1
    assert seen == {
        k: {c: str(n) if n else "" for c, n in per.items()}
        for k, per in expected.items()
    }
    assert seen["TPU v5e:16x16", 256]["many heads, gated"] == "7"
    assert seen["GPU h100:2x8", 16]["many heads, gated"] == "7"
    assert seen["CPU", 8]["page"] == "6" and seen["CPU", 8]["many heads, gated"] == ""
    assert " ".join(table.split()) in filled()


def test_a_row_names_the_compiled_point_nearest_it():
    """Off the grid, a row names the programs of the plan's chip at the compiled device
    count nearest its own by ratio (the smaller on a tie), and that point's sizes."""
    assert planner_page.nearest({8, 64}, 16) == 8  # 2x from 8, 4x from 64
    assert planner_page.nearest({8, 64}, 32) == 64
    assert planner_page.nearest({8, 16, 64}, 32) == 16  # a tie: 2x either way
    assert planner_page.nearest({8, 64, 256}, 128) == 64
    size = planner_page.size_of(GRID["configs"]["many heads, gated"])
    cases = {
        ("v5p:2x2x2", 128): "extrapolated from the 64-device TPU v5p:4x4x4 programs of "
        "the 2 compiled sizes to 128 devices",
        ("v5e:2x4", 128): "extrapolated from the 256-device TPU v5e:16x16 programs of "
        "the one compiled size to 128 devices",
        ("v5e:2x4", 16): "extrapolated from the 8-device TPU v5e:2x4 programs of the 2 "
        "compiled sizes to 16 devices, a size not compiled",
        (
            "h100:1x8",
            32,
        ): "extrapolated from the 16-device GPU h100:2x8 programs of the "
        "one compiled size to 32 devices",
        ("textbook", 64): "extrapolated from the 64-device TPU v5p:4x4x4, GPU h100:8x8 "
        "programs of the 2 compiled sizes to the textbook plan",
    }
    for (plan, devices), said in cases.items():
        case = {**planner_page.DEFAULTS, **size, "devices": devices, "plan": plan}
        if plan != "textbook":
            case["backend"] = planner_page.backend_of(plan)
        rows = [r for r in rows_of(case) if r["valid"] and r["mesh"][3] == 1]
        assert rows and {r["basis"] for r in rows} == {said}, (plan, devices)


def grid_case(config: str, target: str) -> dict:
    fields = planner_page.size_of(GRID["configs"][config])
    return {
        **planner_page.DEFAULTS,
        **fields,
        "devices": grid.DEVICES,
        "plan": target,
        "backend": planner_page.backend_of(target),
    }


# The sizes the form can give: all four, the Llama-style one (grouped-query attention, a
# gated MLP and a tied head) too.
FORM_CONFIGS = list(grid.CONFIGS)
LLAMA_STYLE = "gqa, gated, tied"
# The programs a planner row can be whose figures the target's offered plan (read at the
# page's size) misses: v5e's FSDP programs of the other sizes, which scatter fewer
# gradients, and H100's of the Llama-style size but its tensor-parallel one (its tied
# head's gradient is summed with the embedding's, it gathers two of three MLP matrices
# again in float32).
MISSED = {
    (c, m, t)
    for c, m, t in (
        {
            (c, (1, 8, 1), "v5e:2x4")
            for c in FORM_CONFIGS
            if c != planner_page.PLAN_CONFIG
        }
        | {
            (LLAMA_STYLE, m, "h100:1x8")
            for m in ((8, 1, 1), (1, 8, 1), (2, 1, 4), (4, 1, 2))
        }
        # the 3-D mesh, on v5e and the H100, at every size (the page's too)
        | {(c, (2, 2, 2), t) for c in FORM_CONFIGS for t in ("v5e:2x4", "h100:1x8")}
    )
    if (t, c) not in grid.SKIPPED  # a size the target does not compile misses nothing
}


# Beyond 8 devices, the programs of the larger size whose figures their chip's plan (read
# from its 8-device programs at the page's size) misses: the H100's meshes with both data
# and fsdp, which all-reduce every gradient, as its (2, 2, 2) program does.
LARGE = "many heads, gated"
LARGE_MISSED = (
    {(LARGE, m, "h100:1x8") for m in ((4, 4, 1), (2, 4, 2), (8, 8, 1), (2, 8, 4))}
    | {(LARGE, (1, 16, 4), "v5p:2x2x2")}
    | {(LARGE, m, "v5e:2x4") for m in ((1, 256, 1), (16, 16, 1), (1, 32, 8), (8, 4, 8))}
)


def test_the_larger_programs_check_their_rows_where_their_chips_plan_holds():
    """Each larger program checks the row of its own inputs (its size, devices, mesh, its
    chip's plan and its state formula), naming itself, but where the plan misses it."""
    unheld = {
        (FORM_ALL[p[0]], tuple(p[1:4]), p[4])
        for p in planner_page.coverage()["programs"]
        if not p[-1] and FORM_ALL[p[0]] == LARGE
    }
    assert unheld == LARGE_MISSED
    assert (
        "the H100 plan misses the meshes with both data and fsdp, (4, 4, 1) and (2, 4, 2) "
        "on 16 GPUs and (8, 8, 1) and (2, 8, 4) on 64" in filled()
    )
    assert (
        "The v5e plan misses every mesh with fsdp on 256 chips, (1, 256, 1), (16, 16, 1), "
        "(1, 32, 8) and (8, 4, 8), whose programs all-reduce block gradients that the "
        "eight-chip programs scatter, and the v5p plan misses (1, 16, 4) on 64 chips."
        in filled()
    )
    # v5e's eight-chip FSDP programs scatter the block gradients its 256-chip ones
    # all-reduce (test_planner.py's tpu_large_departures reads the latter)
    assert {"q or out", "mlp"} <= set(planner_page.plans()["v5e:2x4"].scatter)
    for target in grid.LARGE:
        plan = grid.plan_target(target)
        case = {
            **grid_case(LARGE, plan),
            "devices": grid.devices_of(target),
            "backend": planner_page.backend_of(target),
        }
        rows = {tuple(r["mesh"][:3]): r for r in rows_of(case) if r["mesh"][3] == 1}
        for mesh in grid.meshes_of(target):
            row = rows[mesh]
            if (LARGE, mesh, plan) in LARGE_MISSED:
                assert not row["checked"]
                assert row["basis"].endswith(
                    "to this program, which the offered plan misses"
                )
            else:
                label = planner_page.target_label(target)
                assert row["checked"], (target, mesh)
                assert row["basis"] == f"checked against the compiled {label} program"
        # a layout of that count the grid did not compile: extrapolated to its mesh
        others = [r for m, r in rows.items() if m not in grid.meshes_of(target)]
        assert all(not r["checked"] for r in others)
        assert any(r["basis"].endswith("to this mesh") for r in others if r["valid"])


FORM_ALL = list(GRID["configs"])


def test_the_llama_style_size_is_one_the_form_gives_and_its_rows_are_checked():
    """Grouped-query attention, a gated MLP and a tied head are form inputs now: the grid's
    Llama-style size is one of the form's sizes, and its programs check their rows where
    the offered plan holds (it checked none before)."""
    assert len(planner_page.coverage()["sizes"]) == len(GRID["configs"])
    assert len(grid.CONFIGS) == 4
    size = planner_page.size_of(GRID["configs"][LLAMA_STYLE])
    assert (size["kv_heads"], size["gated"], size["tied"]) == (8, True, True)
    assert size["heads"] == 16
    checked = {
        (target, tuple(r["mesh"][:3]))
        for target in EIGHT
        for r in rows_of(grid_case(LLAMA_STYLE, target))
        if r.get("checked")
    }
    # six meshes on the three targets that compile it (v5p skips it: grid.SKIPPED), but
    # the five the H100 plan misses and (2, 2, 2) and (1, 8, 1) on v5e
    assert ("v5p:2x2x2", LLAMA_STYLE) in grid.SKIPPED
    assert len(checked) == 3 * 6 - 5 - 2
    assert ("cpu", (8, 1, 1)) in checked and ("h100:1x8", (1, 1, 8)) in checked
    assert "options the form takes too" in filled()


def test_the_h100_plan_misses_the_llama_style_size_where_the_prose_says():
    """Its data-parallel and 2-D programs add the tied head's gradient to the embedding's;
    its FSDP program scatters the embedding's and the third MLP matrix's gradients and
    gathers a second MLP matrix again in float32: the offered plan changed in just those
    fields holds each program, and without any one of them the FSDP program does not."""
    plan = planner_page.plans()["h100:1x8"]
    model = pl.model_of(GRID, LLAMA_STYLE)
    assert plan.scatter.count("mlp") == 2 and plan.regather.count("mlp") == 1
    assert plan.head_apart and not plan.embedding_scatter
    fsdp = {
        "scatter": None,
        "embedding_scatter": True,
        "regather": (*plan.regather, "mlp"),
    }
    fixes = {m: {"head_apart": False} for m in ((8, 1, 1), (2, 1, 4), (4, 1, 2))}
    fixes[1, 8, 1] = fsdp
    assert {(LLAMA_STYLE, m, "h100:1x8") for m in fixes} == {
        key
        for key in MISSED
        if key[2] == "h100:1x8" and key[0] == LLAMA_STYLE and key[1] != (2, 2, 2)
    }

    def held(mesh, changes):
        entry = ENTRIES_BY_KEY["h100:1x8", LLAMA_STYLE, mesh]
        compiled_wire = sum(s["wire_bytes"] for s in entry["summary"].values())
        ours = pl.wire_bytes(
            model, pl.entry_layout(entry), dataclasses.replace(plan, **changes)
        )
        return ours == pytest.approx(compiled_wire, rel=pl.TOLERANCE)

    for mesh, changes in fixes.items():
        assert not held(mesh, {}) and held(mesh, changes), mesh
    for left_out in fsdp:
        assert not held((1, 8, 1), {k: v for k, v in fsdp.items() if k != left_out})
    text = filled()
    assert (
        "Its data-parallel and 2-D programs add the tied head's gradient to the "
        "embedding's before summing it; its FSDP program scatters two more gradients, the "
        "embedding's and the third MLP matrix's, and gathers a second MLP matrix again in "
        "float32." in text
    )


@pytest.mark.parametrize("target", EIGHT)
@pytest.mark.parametrize("config", FORM_CONFIGS)
def test_a_grid_entrys_own_inputs_are_checked(config, target):
    """A compiled program's own inputs give rows it checks: each row's figures are its
    program's within the tolerance; only the v5e FSDP rows of the sizes its plan was not
    read at, which that plan misses, are not."""
    rows = rows_of(grid_case(config, target))
    meshes = [r for r in rows if r["mesh"][3] == 1]
    assert [tuple(r["mesh"][:3]) for r in meshes] == [
        lay.mesh for lay in pl.layouts(grid.DEVICES, stages=False)
    ]
    for row in meshes:
        key = (target, config, tuple(row["mesh"][:3]))
        if (target, config) in grid.SKIPPED:  # a size this target does not compile
            assert not row["checked"]
            assert row["basis"].endswith("to a size not compiled")
            continue
        if key not in ENTRIES_BY_KEY:  # a layout the grid has not compiled
            assert not row["checked"]
            assert row["basis"].endswith("to this mesh")
            continue
        entry = ENTRIES_BY_KEY[key]
        compiled_wire = sum(s["wire_bytes"] for s in entry["summary"].values())
        state = entry["memory"]["argument_bytes"]
        held = row["state"] == pytest.approx(state, rel=pl.TOLERANCE) and row[
            "wire"
        ] == pytest.approx(compiled_wire, rel=pl.TOLERANCE)
        missed = (config, tuple(row["mesh"][:3]), target) in MISSED
        assert held == (not missed)
        assert row["checked"] == held
        if held:
            assert row["basis"] == (
                f"checked against the compiled {planner_page.target_label(target)} program"
            )
        else:
            assert row["basis"].endswith(
                "to this program, which the offered plan misses"
            )
    # the pipeline, where the layers split into stages: nothing compiled
    assert not any(r.get("checked") for r in rows if r["mesh"][3] > 1)


def test_a_row_is_checked_only_inside_what_the_grid_compiled():
    """Over the browser tests' inputs: every checked row is a compiled program's: its size,
    its device count and mesh, a target of the plan's chip and that target's state
    formula, AdamW and float32 parameters; and the row names that target."""
    checked = 0
    for case in planner_page.cases():
        for row in planner_page.answer(case).get("rows", []):
            if not row.get("checked"):
                assert not row.get("basis", "").startswith("checked")
                continue
            checked += 1
            size = {k: case[k] for k in planner_page.SIZE_FIELDS}
            found = [
                e
                for e in GRID["entries"]
                if planner_page.size_of(GRID["configs"][e["config"]]) == size
                and grid.plan_target(e["target"]) == case["plan"]
                and e["mesh"] == row["mesh"][:3]
                and row["mesh"][3] == 1
            ]
            assert len(found) == 1, (case, row["mesh"])
            target = found[0]["target"]
            assert math.prod(found[0]["mesh"]) == case["devices"]
            assert case["plan"] in EIGHT
            assert case["backend"] == planner_page.backend_of(target)
            assert (case["optimizer"], case["param_bytes"]) == ("adamw", 4)
            label = planner_page.target_label(target)
            assert row["basis"] == f"checked against the compiled {label} program"
    # four sizes on four targets (but the sizes each skips), six layouts, but the rows the
    # offered plans miss; the larger size's seven layouts on each of its four targets,
    # but those their chip's plan misses; and Llama-3-8B's first-ranked programs on 64
    # H100s and 64 v5p chips
    assert len(grid.SKIPPED) == 6
    assert checked == (4 * 4 - 6) * 6 - len(MISSED) + 4 * 7 - len(LARGE_MISSED) + 2


@pytest.mark.parametrize(
    ("change", "outside"),
    [
        ({"devices": 16}, "16 devices"),
        ({"devices": 1}, "one device"),
        ({"optimizer": "sgd"}, "the sgd optimizer"),
        ({"param_bytes": 2}, "bfloat16 parameters"),
        ({"backend": "cpu"}, "the CPU state formula"),
        ({"d_model": 2048, "heads": 16}, "a size not compiled"),
        ({"batch": 32}, "a size not compiled"),
        ({"remat": False}, "a size not compiled"),
    ],
)
def test_a_row_outside_the_grid_says_what_it_is_extrapolated_to(change, outside):
    rows = rows_of({**grid_case(planner_page.PLAN_CONFIG, "v5p:2x2x2"), **change})
    assert rows and not any(r.get("checked") for r in rows)
    for row in rows:
        if row["mesh"][3] > 1 or not row["valid"]:
            continue
        # v5p compiles one of the four sizes on 8 chips, the page's (grid.SKIPPED)
        assert row["basis"] == (
            "extrapolated from the 8-device TPU v5p:2x2x2 programs of the one compiled "
            f"size to {outside}"
        )


# The script's arithmetic run in Node, without the page: each case's model made from the
# form's text (makeModel), then planTable; every row read back (its layout and mesh, and
# why it is greyed or its state, wire terms, fit, basis, temporaries, time and rank, and
# its program) for comparison with Python's, and what the page says when no row can
# split the model.
NODE = """
const fs = require("fs");
global.window = {};
global.document = { getElementById: () => null, readyState: "complete" };
eval(fs.readFileSync(process.argv[2], "utf8"));
const P = window.StrategyPlanner;
P.load(fs.readFileSync(process.argv[3], "utf8"));
const data = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));
const cases = JSON.parse(fs.readFileSync(process.argv[4], "utf8"));
const out = cases.map((c) => {
  const raw = {};
  for (const k of ["vocab", "d_model", "heads", "kv_heads", "mlp", "layers", "seq",
                   "batch", "microbatches"]) raw[k] = String(c[k]);
  Object.assign(raw, {gated: c.gated, tied: c.tied, optimizer: c.optimizer,
                      param_bytes: String(c.param_bytes), remat: c.remat});
  const made = P.makeModel(raw);
  const rows = P.planTable({model: made.model, devices: c.devices,
    memory: c.memory * data.gib, plan: data.plans[c.plan], planName: c.plan,
    backend: c.backend, chip: c.chip});
  const shown = rows.map((r) => {
    const l = r.layout;
    // every row's program, or why it has none (planner_program.text_or_why)
    const o = {layout: l.name, mesh: [l.data, l.fsdp, l.tensor, l.stages], rank: r.rank,
               valid: r.valid, program: P.rowProgram(made.model, r)};
    if (!r.valid) return {...o, reason: r.reason, ...(r.refused ? {refused: r.refused} : {})};
    Object.assign(o, {state: r.state, wire: r.wire, terms: Object.fromEntries(r.terms),
                      fits: r.fits, checked: r.checked, basis: r.basis});
    if (r.temporaries !== undefined) {
      Object.assign(o, {temporaries: String(r.temporaries), total: String(r.total),
                        room: r.room, total_fits: r.total_fits, host: String(r.host)});
    }
    // JSON has no Infinity: a layout never compute-bound says so in words
    o.time = {...r.time};
    if (o.time.compute_bound === Infinity) o.time.compute_bound = "Infinity";
    return o;
  });
  return {rows: shown, none: P.noLayout(made.model, c.devices),
          slice: P.sliceNote(c.chip, c.devices)};
});
process.stdout.write(JSON.stringify(out));
"""


def node_cases() -> list[dict]:
    """The browser grid's cases the model accepts (presets and compiled sizes among them),
    each on its chip (every chip in turn), and the examples."""
    found = [c for c in planner_page.cases() if "rows" in planner_page.answer(c)]
    return [*found, *planner_page.examples()]


@pytest.mark.skipif(
    shutil.which("node") is None, reason="needs Node.js (apt-get nodejs)"
)
def test_the_script_gives_pythons_temporaries_time_and_rank(tmp_path):
    cases = node_cases()
    assert {c["preset"] for c in cases} >= set(planner_page.presets())
    assert {c["chip"] for c in cases} == set(planner_page.CHIPS)
    (tmp_path / "data.json").write_text(
        planner_page.data_json().replace("\\u003c", "<")
    )
    # the remat field holds a name: none, full or the policy's
    typed = [{**c, "remat": planner_page.remat_text(c["remat"])} for c in cases]
    (tmp_path / "cases.json").write_text(json.dumps(typed))
    (tmp_path / "drive.js").write_text(NODE)
    script = PAGE.parents[1] / "javascripts" / "strategy-planner.js"
    done = subprocess.run(
        [
            "node",
            str(tmp_path / "drive.js"),
            str(script),
            str(tmp_path / "data.json"),
            str(tmp_path / "cases.json"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout)
    wrong, timed = [], 0
    programs = 0
    kinds, nones, refused = set(), 0, 0
    for case, shown in zip(cases, got, strict=True):
        answer = planner_page.answer(case)
        want = answer["rows"]
        if shown["none"] != answer.get("none"):
            wrong.append((case, answer.get("none"), shown["none"]))
        if shown["slice"] != answer.get("slice"):
            wrong.append((case, answer.get("slice"), shown["slice"]))
        refused += sum("refused" in r for r in want)
        nones += "none" in answer
        model = planner_page.model_of(case)
        for w, g in zip(want, shown["rows"], strict=True):
            expect = dict(w)
            kinds.add((w["layout"], w["valid"], "mfu" in w.get("time", {})))
            layout = planner_page.row_layout(w)
            expect["program"] = planner_page.row_program(case, w)
            if "refused" not in w:  # the planner's program, where the slice builds it
                assert expect["program"] == planner_program.text_or_why(model, layout)
            programs += "text" in expect["program"]
            for k in ("temporaries", "total", "host"):
                if k in expect:
                    expect[k] = str(expect[k])
            if expect.get("time", {}).get("compute_bound") == math.inf:
                expect["time"] = {**expect["time"], "compute_bound": "Infinity"}
            if g != expect:
                wrong.append((case, w, g))
            timed += "mfu" in w.get("time", {})
    assert timed >= 300
    assert programs >= 300
    assert nones >= 10
    # meshes the v5p slices' make_mesh refuses, greyed alike in both languages
    assert refused >= 50
    # every kind of layout, priced with a time and greyed: the 3-D meshes and the
    # pipelines split over fsdp and tensor among them
    names = {name for name, _, _ in kinds}
    assert {"data x FSDP x tensor", "pipeline x FSDP x tensor"} <= names
    for name in names:
        assert {(name, True, True), (name, False, False)} <= kinds, name
    # thresholds of every kind: never, from any batch, above a number of sequences
    bounds = [
        r["time"]["compute_bound"]
        for case in cases
        for r in planner_page.answer(case)["rows"]
        if "compute_bound" in r.get("time", {})
    ]
    assert math.inf in bounds and 0.0 in bounds
    assert sum(1 <= b < math.inf for b in bounds) >= 100
    assert not wrong, f"{len(wrong)} rows differ; the first: {wrong[0][1:]}"


def test_the_static_program_is_the_default_cases_top_row():
    """Without the script the page shows planner_program's text for the form's starting
    point, its top-ranked row (the same function the script mirrors)."""
    import html

    page = planner_page.fill(PAGE.read_text())
    row = planner_page.program_row(planner_page.DEFAULTS)
    assert row["rank"] == 1
    text = planner_program.program(
        planner_page.model_of(planner_page.DEFAULTS), planner_page.row_layout(row)
    )
    assert f'<code data-planner="program">{html.escape(text)}</code>' in page


@pytest.mark.parametrize(
    ("change", "noted"),
    [({}, False), ({"optimizer": "sgd"}, True), ({"param_bytes": 2}, True)],
)
def test_the_program_says_when_the_row_priced_another_optimizer(change, noted):
    model = planner_page.model_of({**planner_page.DEFAULTS, **change})
    text = planner_program.program(model, pl.Layout("FSDP", fsdp=8))
    assert ("TrainState trains with AdamW on float32 weights" in text) is noted


def test_a_pipeline_row_has_a_bubbled_time_no_temporaries_and_no_rank():
    """The page's words on a pipeline: the last stage's FLOPs per device stretched by
    the bubble (M + stages - 1)/M plus the optimizer's update; no temporaries, never
    ranked; long tables folded past sixteen rows; the nearest usable device counts up
    to 64 away."""
    text = " ".join(filled().split())
    assert "stretched by the bubble, (M + stages \u2212 1)/M" in text
    assert "so it is never ranked" in text
    assert planner_page.FOLD == 16 and "past sixteen rows" in text
    assert pl.NEAR == 64 and "up to 64 away" in text
    case = {**planner_page.DEFAULTS, "microbatches": 4}
    model = planner_page.model_of(case)
    layout = pl.Layout("pipeline x FSDP x tensor", fsdp=2, tensor=2, stages=2)
    stage = tc.step_flops(pl.Model(**{**model.__dict__, "layers": 4}))
    work = (stage["forward"] + stage["backward"] + stage["recompute"]) / 4
    updated = (4 * model.layer_matrices + model.vocab * 1024) / 4 + 9 * 1024 / 2
    assert tc.pipeline_flops(model, layout) == pytest.approx(
        work * (4 + 2 - 1) / 4 + 15 * updated
    )
    # more microbatches, a smaller bubble
    more = pl.Model(**{**model.__dict__, "microbatches": 8})
    assert tc.pipeline_flops(more, layout) < tc.pipeline_flops(model, layout)
    rows = planner_page.answer(case)["rows"]
    pipes = [r for r in rows if r["mesh"][3] > 1 and r["valid"]]
    assert pipes and all(
        r["rank"] is None and "temporaries" not in r and "mfu" in r["time"]
        for r in pipes
    )
    assert any(r["rank"] for r in rows)


def test_the_llama_examples_first_ranked_programs_are_compiled_at_full_size():
    """Issue 29's examples: Llama-3-8B on 64 H100s and on a v5p slice of 64 chips. The
    program each ranks first is the one the grid compiled (same size, batch and mesh, for
    that chip), and its figures are held to the program's: state and wire bytes within
    planner.TOLERANCE (the v5p program's wire bytes are the unmodelled plan, and the page
    names it), temporaries within the H100's tolerance (unchecked on TPU)."""
    fields, batch = grid.EXAMPLE_CONFIGS["Llama-3-8B"]
    preset = planner_page.presets()["Llama-3-8B"]["fields"]
    assert {k: preset[k] for k in fields} == fields
    assert batch == planner_page.EXAMPLE_BATCH
    found = {f["entry"]["target"]: f for f in planner_page.examples_compiled()}
    assert set(found) == {"h100:8x8", "v5p:4x4x4"}
    for target, f in found.items():
        (mesh,) = grid.EXAMPLE_MESHES[target, "Llama-3-8B"]
        assert tuple(f["row"]["mesh"]) == (*mesh, 1) and f["row"]["rank"] == 1
        assert f["entry"]["config"] == "Llama-3-8B" and "error" not in f["entry"]
        ours, theirs, tolerance = f["figures"]["state"]
        assert abs(ours / theirs - 1) <= tolerance
    h100, v5p = found["h100:8x8"]["figures"], found["v5p:4x4x4"]["figures"]
    ours, theirs, tolerance = h100["wire"]
    assert abs(ours / theirs - 1) <= tolerance
    ours, theirs, tolerance = h100["temporaries"]
    assert tolerance == tc.TOLERANCE["gpu"] and abs(ours / theirs - 1) <= tolerance
    assert v5p["temporaries"][2] is None
    # the program all-reduces FSDP's weights whole over its 64 chips, and so does the
    # offered v5p plan on an fsdp axis of 64 (read from the grid's 64-chip programs)
    ours, theirs, tolerance = v5p["wire"]
    assert abs(ours / theirs - 1) <= tolerance
    assert found["v5p:4x4x4"]["entry"] not in planner_page.unmodelled()
    table = planner_page.examples_compiled_text()
    assert " ".join(table.split()) in filled()
    rows = [line for line in table.splitlines()[2:]]
    assert len(rows) == 6  # state, wire and temporaries of each
    assert sum(r.endswith("unchecked on TPU |") for r in rows) == 1
    assert sum(r.endswith("within 1% |") for r in rows) == 4
