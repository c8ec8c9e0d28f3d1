"""The planner's rule for which meshes `jax.make_mesh` builds on a TPU slice
(docs_build/tpu_slices.py), held to what make_mesh did with libtpu's compile-only devices
of every published slice (docs_build/tpu_slices.json, `python -m docs_build.tpu_slices`),
and the planner's rows greyed by it: the meshes the compiled grid found refused among them,
no program printed for them, GPU and CPU rows untouched, and a count with no published slice
left unchecked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from docs_build import planner as pl
from docs_build import planner_grid as grid
from docs_build import planner_page, tpu_slices
from docs_build.compiled import records

RECORD = json.loads(tpu_slices.RESULTS.read_text(encoding="utf-8"))
PAGE = Path(tpu_slices.__file__).parents[1] / "docs" / "tools" / "strategy-planner.md"


def slices() -> list[dict]:
    return RECORD["slices"]


def test_the_record_was_made_with_the_pinned_jax_and_libtpu():
    """make_mesh's rule is JAX's code: a new JAX or libtpu makes the record stale."""
    pins = records.pins("tpu")
    for name in ("jax", "jaxlib", "libtpu"):
        assert RECORD["versions"][name] == pins[name], name


def test_every_published_slice_was_tried_with_every_mesh():
    tried = {(s["chip"], s["devices"]): s for s in slices()}
    assert set(tried) == {
        (chip, n) for chip, table in tpu_slices.SLICES.items() for n in table
    }
    for (chip, n), s in tried.items():
        assert "error" not in s, s
        assert s["topology"] == "x".join(map(str, tpu_slices.SLICES[chip][n]))
        meshes = [*map(tuple, s["accepted"]), *(tuple(r["mesh"]) for r in s["refused"])]
        assert sorted(meshes) == sorted(tpu_slices.meshes(n))
        # every planner mesh of n devices is one of them
        assert {lay.mesh for lay in pl.layouts(n, stages=False)} == set(meshes)


@pytest.mark.parametrize(
    "chip,devices",
    [(c, n) for c, table in tpu_slices.SLICES.items() for n in table],
)
def test_the_rule_is_what_make_mesh_did(chip, devices):
    s = next(s for s in slices() if (s["chip"], s["devices"]) == (chip, devices))
    for mesh in s["accepted"]:
        assert tpu_slices.accepts(chip, devices, tuple(mesh)) is True, mesh
        assert tpu_slices.refusal(chip, devices, tuple(mesh)) is None
    for r in s["refused"]:
        assert tpu_slices.accepts(chip, devices, tuple(r["mesh"])) is False, r
        assert r["error"].startswith(
            "NotImplementedError: Failed to find assignment for logical_axis_index"
        ), r
        said = tpu_slices.refusal(chip, devices, tuple(r["mesh"]))
        assert said.startswith("jax.make_mesh gives each axis whole sides of the ")
        # what it offers instead: meshes of the same kind that make_mesh built
        offered = tpu_slices.alternatives(chip, devices, tuple(r["mesh"]))
        assert offered and {tuple(m) for m in offered} <= {
            tuple(m) for m in s["accepted"]
        }


def test_v5e_builds_every_mesh_and_v5p_refuses_only_where_sides_would_be_shared():
    refused = {(s["chip"], s["devices"]): len(s["refused"]) for s in slices()}
    assert all(refused[k] == 0 for k in refused if k[0] == "v5e")
    # on v5p the small slices build every mesh, the 64-chip cube 10 of its 28
    assert refused["v5p", 4] == refused["v5p", 8] == 0
    s = next(s for s in slices() if (s["chip"], s["devices"]) == ("v5p", 64))
    assert (len(s["accepted"]), len(s["refused"])) == (10, 18)
    assert tpu_slices.axis_sizes((4, 4, 4)) == [4, 16, 64]
    assert tpu_slices.RULES == {"v5e": "split", "v5p": "whole sides"}


def test_the_meshes_the_grid_found_refused_are_greyed_and_its_compiled_ones_stand():
    """planner_grid tried (8, 8, 1) and (2, 8, 4) on the 64-chip v5p slice and make_mesh
    refused them: the planner greys both, saying which mesh of the kind to use, and
    prices every mesh the grid compiled there."""
    case = {**planner_page.DEFAULTS, "chip": "v5p", "devices": 64, "batch": 64}
    rows = {tuple(r["mesh"][:3]): r for r in planner_page.answer(case)["rows"]}
    recorded = json.loads(grid.RESULTS.read_text(encoding="utf-8")).get("refused")
    refused = grid.REFUSED["v5p:4x4x4"]
    if recorded is not None:  # the grid as compiled since it tries them
        assert {tuple(r["mesh"]) for r in recorded} == set(refused)
        assert all("Failed to find assignment" in r["refusal"] for r in recorded)
    assert refused == ((8, 8, 1), (2, 8, 4))
    for mesh in refused:
        assert rows[mesh]["valid"] is False and rows[mesh]["reason"] == ""
    assert rows[8, 8, 1]["refused"] == (
        "jax.make_mesh gives each axis whole sides of the 4 x 4 x 4 v5p slice, no side "
        "to two axes (an axis of 4, 16 or 64 chips): use data x fsdp 4 x 16 or 16 x 4"
    )
    assert rows[2, 8, 4]["refused"].endswith(": use data x fsdp x tensor 4 x 4 x 4")
    for mesh in grid.MESHES_OF_TARGET["v5p:4x4x4"]:
        assert "refused" not in rows[mesh], mesh
        assert rows[mesh]["valid"] or rows[mesh]["reason"], mesh


def test_a_refused_rows_suggestions_are_the_meshes_that_split_the_model():
    """On the 64-chip v5p cube make_mesh refuses FSDP x tensor 8 x 8; of the meshes of
    that kind it builds, 4 x 16 puts 16 on tensor, which a model of 8 heads cannot split:
    only 16 x 4 is offered. A model that cannot split either is told so."""
    case = {**planner_page.DEFAULTS, "chip": "v5p", "devices": 64, "batch": 64}
    assert case["heads"] % 16 and not case["heads"] % 4  # 8 heads: tensor 4, not 16
    rows = {tuple(r["mesh"][:3]): r for r in planner_page.answer(case)["rows"]}
    assert rows[1, 8, 8]["refused"].endswith(": use fsdp x tensor 16 x 4")
    assert tpu_slices.refusal("v5p", 64, (1, 8, 8)).endswith(
        ": use fsdp x tensor 4 x 16 or 16 x 4"
    )
    said = tpu_slices.refusal("v5p", 64, (1, 8, 8), splits=lambda mesh: False)
    assert said.endswith(
        "; the fsdp x tensor meshes it builds (4 x 16 or 16 x 4) cannot split this "
        "model: split other axes"
    )
    # the page's script words it from the same templates
    assert set(tpu_slices.data()["words"]) == set(tpu_slices.WORDS)


def test_a_refused_mesh_gets_no_program_and_no_rank():
    case = {**planner_page.DEFAULTS, "chip": "v5p", "devices": 64, "batch": 64}
    rows = planner_page.answer(case)["rows"]
    refused = [r for r in rows if "refused" in r]
    assert len(refused) == 18
    for r in refused:
        assert r["rank"] is None
        shown = planner_page.row_program(case, r)
        assert shown == {"why": "no program: " + r["refused"]}
    # the rows it builds keep their program
    built = [r for r in rows if r["valid"] and r["mesh"][3] == 1]
    assert built and all("text" in planner_page.row_program(case, r) for r in built)


@pytest.mark.parametrize("chip", ["cpu", "h100", "a100"])
def test_gpu_and_cpu_rows_are_not_checked_against_a_slice(chip):
    case = {**planner_page.DEFAULTS, "chip": chip, "devices": 64, "batch": 64}
    found = planner_page.answer(case)
    assert "slice" not in found
    assert not any("refused" in r for r in found["rows"])


def test_a_count_with_no_published_slice_is_said_and_not_checked():
    case = {**planner_page.DEFAULTS, "chip": "v5p", "devices": 16, "batch": 16}
    found = planner_page.answer(case)
    assert not any("refused" in r for r in found["rows"])
    assert found["slice"] == (
        "TPU v5p, 16 chips: Google publishes no slice of 16 chips, so no mesh is "
        "checked against jax.make_mesh"
    )
    assert tpu_slices.accepts("v5p", 16, (4, 4, 1)) is None


def test_the_page_says_what_make_mesh_builds_as_the_record_has_it():
    """The sentences on the planner page, held to the record and the published shapes."""
    text = " ".join(PAGE.read_text(encoding="utf-8").split())
    cube = next(s for s in slices() if (s["chip"], s["devices"]) == ("v5p", 64))
    built, every = len(cube["accepted"]), len(tpu_slices.meshes(64))
    v5e_all = all(not s["refused"] for s in slices() if s["chip"] == "v5e")
    assert v5e_all
    unpublished = [
        n
        for n in planner_page.DEVICE_CHOICES
        if n > 1 and tpu_slices.shape_of("v5p", n) is None
    ]
    assert 16 in unpublished
    sides = f" {planner_page.TIMES} ".join(map(str, tpu_slices.SLICES["v5p"][64]))
    links = ", ".join(f"[{c}]({tpu_slices.SOURCES[c][1]})" for c in ("v5e", "v5p"))
    assert (
        "On a TPU chip, a mesh `jax.make_mesh` would refuse on the slice Google "
        f"publishes for that many chips ({links}) is greyed too, with the meshes of its "
        f"kind to use instead: on v5p each mesh axis takes whole sides of the slice, so "
        f"a 64-chip slice ({sides}) "
        f"builds {built} of the {every} meshes; v5e builds every one. "
        "A chip count with no published slice, such as 16 v5p chips, is not checked."
    ) in text
