"""The explorer's moves: the compiled grid (docs_build/reshard_grid.py) is current and varied,
the page's script names only plans JAX compiled (run under Node, as the build runs it), the
check catches a script that is wrong, and the page's numbers come from the check."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from docs_build import explorer, reshard_grid
from docs_build.compiled.driver import pins as family_pins

GRID = json.loads(reshard_grid.RESULTS.read_text(encoding="utf-8"))
PAGE = Path(__file__).resolve().parents[2] / "docs" / "tools" / "sharding-explorer.md"

needs_node = pytest.mark.skipif(
    shutil.which("node") is None, reason="the page's script runs under Node"
)


def test_the_grid_was_made_from_the_code_and_pins_as_they_are():
    now = reshard_grid.inputs_digest()
    stale = sorted(p for p in now if GRID["inputs"].get(p) != now[p])
    assert not stale, (
        f"docs_build/reshard_grid.json is older than {stale}: run `nox -s reshard` and "
        "commit the result"
    )
    for family in reshard_grid.FAMILIES:
        pinned = family_pins(family)
        for name in ("jax", "jaxlib", "libtpu", "jax-cuda12-plugin", "jax-cuda12-pjrt"):
            if name in pinned:
                assert GRID["versions"][name] == pinned[name], "run `nox -s reshard`"


def test_the_reshard_session_installs_every_family_the_grid_needs():
    import tomllib

    groups = tomllib.loads(
        (explorer.ROOT / "pyproject.toml").read_text(encoding="utf-8")
    )["dependency-groups"]
    assert groups["compiled"] == [
        {"include-group": family} for family in reshard_grid.FAMILIES
    ]
    noxfile = (explorer.ROOT / "noxfile.py").read_text(encoding="utf-8")
    session = noxfile.split("def reshard(", 1)[1].split("\n@nox.session", 1)[0]
    assert 'install(session, "compiled")' in session


def test_the_grid_is_the_cases_the_module_draws():
    drawn = reshard_grid.cases()
    stored = [{k: c[k] for k in drawn[0]} for c in GRID["cases"]]
    assert stored == drawn


def test_the_grid_is_large_and_varied():
    cases = GRID["cases"]
    programs = [m for m in explorer.moves()]
    assert len(cases) >= 200 and len(programs) >= 2 * len(cases) - 200
    assert {len(c["shape"]) for c in cases} == {1, 2, 3, 4}
    assert {len(c["mesh"]) for c in cases} == {1, 2, 3}
    assert max(math.prod(c["mesh"]) for c in cases) == 256
    assert {c["dtype"] for c in cases} == set(reshard_grid.DTYPES)
    eight = [c for c in cases if math.prod(c["mesh"]) == 8 and "crash" not in c]
    assert all(
        set(c["plans"]) == {"cpu", *reshard_grid.TPU_TARGETS, *reshard_grid.GPU_TARGETS}
        for c in eight
    )
    kinds = {s["kind"] for m in programs for s in m["plan"]}
    assert kinds >= {"all-gather", "all-to-all", "collective-permute"}
    # a move that the compiler aborts is kept, with the check that failed
    assert all(c["crash"].startswith("Check failed") for c in cases if "crash" in c)


@needs_node
def test_the_script_names_only_compiled_plans_and_most_of_them():
    report = explorer.check_moves()
    assert report["disagreements"] == []
    for target, counts in report["targets"].items():
        assert counts["named"] >= counts["programs"] / 2, target
    # every kind of plan is among the named: nothing, and each collective
    named = [m for m in explorer.moves() if m not in report["unmodelled"]]
    assert any(m["plan"] == [] for m in named)
    for kind in ("all-gather", "all-to-all", "collective-permute"):
        assert any(kind in {s["kind"] for s in m["plan"]} for m in named), kind


def test_the_gpu_makes_the_cpus_plans_with_bfloat16_at_two_bytes():
    # the page: "An H100 node ... made the CPU's plan for each of the grid's 8-device
    # moves, but with `bfloat16` at its own two bytes"
    assert "made the CPU's plan for each of the grid's 8-device moves" in " ".join(
        PAGE.read_text(encoding="utf-8").split()
    )
    eight = [c for c in GRID["cases"] if "h100:1x8" in c.get("plans", {})]
    assert len(eight) == sum(
        math.prod(c["mesh"]) == 8 and "crash" not in c for c in GRID["cases"]
    )
    for case in eight:
        half = 2 if case["dtype"] == "bfloat16" else 1
        cpu = [{**s, "wire": s["wire"] / half} for s in case["plans"]["cpu"]]
        assert case["plans"]["h100:1x8"] == cpu, case


@needs_node
def test_the_script_names_the_gpus_gathers_of_small_arrays():
    # The TPU compiler may run these as all-reduces, so the script declines them for a TPU;
    # the GPU's programs gather them, and the script names them (check_moves: correctly).
    gpu = [m for m in explorer.moves() if m["backend"] == "gpu"]
    as_tpu = explorer.script_answers(
        [{**explorer.move_job(m), "backend": "tpu"} for m in gpu]
    )
    as_gpu = explorer.script_answers([explorer.move_job(m) for m in gpu])
    small = [
        g
        for t, g in zip(as_tpu, as_gpu, strict=True)
        if t.get("steps") is None and "all-reduce" in t.get("why", "")
    ]
    assert small and all(g["steps"] for g in small)


MUTATIONS = {
    # the CPU gathers the last dimension first
    "for (d = nd - 1; d >= 0; d--) {": "for (d = 0; d < nd; d++) {",
    # bfloat16 travels as float32 on the CPU backend
    "cpu: { float32: 4, bfloat16: 4, int8: 1 }": "cpu: { float32: 4, bfloat16: 2, int8: 1 }",
    # the all-to-all moves the minor factor
    "r[b] = ix[b] * k + (ix[a] % k);": "r[b] = (ix[a] % k) * s.counts[b] + ix[b];",
    # the GPU gathers one dimension at a time, as the CPU does (the TPU gathers at once)
    'if (backend === "tpu") {': 'if (backend !== "cpu") {',
    # the GPU's collectives carry bfloat16 as bfloat16 (the CPU's as float32)
    "gpu: ITEMSIZE };": "gpu: { float32: 4, bfloat16: 4, int8: 1 } };",
}


@needs_node
@pytest.mark.parametrize("old", sorted(MUTATIONS))
def test_a_wrong_rule_in_the_script_stops_the_check(old, tmp_path, monkeypatch):
    text = explorer.SCRIPT.read_text(encoding="utf-8")
    assert text.count(old) == 1
    wrong = tmp_path / "sharding-explorer.js"
    wrong.write_text(text.replace(old, MUTATIONS[old]), encoding="utf-8")
    monkeypatch.setattr(explorer, "SCRIPT", wrong)
    monkeypatch.setattr(explorer, "ROOT", tmp_path)
    with pytest.raises(explorer.ScriptDisagrees, match="names a plan JAX did not"):
        explorer.check_moves()


def test_without_node_the_build_says_what_to_install(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match=r"install Node\.js"):
        explorer.script_answers([])


@needs_node
def test_the_page_says_what_the_check_found():
    text = PAGE.read_text(encoding="utf-8")
    assert explorer.MOVES in text and explorer.MOVES_CHECKED in text
    filled = " ".join(explorer.fill(text).split())
    report = explorer.check_moves()
    cpu = report["targets"]["cpu"]
    assert f"{cpu['named']:,} of the {cpu['programs']:,} CPU programs" in filled
    for target in (*reshard_grid.TPU_TARGETS, *reshard_grid.GPU_TARGETS):
        counts = report["targets"][target]
        assert (
            f"{counts['named']:,} of the {counts['programs']:,} for {target}" in filled
        )
    total = sum(c["programs"] for c in report["targets"].values())
    assert f"compiled {total:,} such moves" in filled
    crashed = sum("crash" in c for c in GRID["cases"])
    assert f"{crashed} of the pairs made the compiler abort" in filled


def test_the_table_of_moves_is_every_compiled_move_of_its_mesh_and_shape():
    mesh, shape = explorer.MOVES_EXAMPLE
    cases = [
        c
        for c in GRID["cases"]
        if c["mesh"] == mesh and c["shape"] == shape and "crash" not in c
    ]
    rows = explorer.moves_table().splitlines()[2:]
    assert len(rows) == len(cases) >= 10
    for row, case in zip(rows, cases, strict=True):
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert cells[1] == f"`{explorer.spec_text(case['source'])}`"
        assert cells[3] == explorer.plan_text(case["plans"]["cpu"])
        assert cells[4] == explorer.plan_text(case["plans"]["v5e:2x4"])
        assert cells[5] == explorer.plan_text(case["plans"]["h100:1x8"])


def test_plans_read_as_a_reader_would_say_them():
    plan = [
        {"kind": "collective-permute", "group": None, "groups": 8, "wire": 1024.0},
        {"kind": "all-gather", "group": 4, "groups": 2, "wire": 3072.0},
        {"kind": "all-gather", "group": 8, "groups": 1, "wire": 7168.0},
    ]
    assert explorer.plan_text(plan) == (
        "collective-permute 8 pairs, 1,024 B; all-gather over 4 (2 groups), 3,072 B; "
        "all-gather over 8, 7,168 B"
    )
    assert explorer.plan_text([]) == "nothing sent"
