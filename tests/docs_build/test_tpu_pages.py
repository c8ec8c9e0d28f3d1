"""docs_build.tpu.pages: the TPU-compiled table and the numbers in prose come from one file,
and the claims the scaling page makes about them hold for the committed results, so a new
compiler that changes them fails here instead of leaving the page wrong."""

import re
from pathlib import Path

import pytest

from docs_build.tpu import pages

ROOT = Path(__file__).resolve().parents[2]
SCALING = ROOT / "docs" / "training" / "scaling.md"


def kinds(target: str, strategy: str) -> dict[str, int]:
    """How many times per step each kind of collective runs."""
    summary = pages.program(target, strategy)["summary"]
    return {kind: s["runs"] for kind, s in summary.items()}


def wire(target: str, strategy: str) -> float:
    return pages.wire_mib(pages.program(target, strategy))


def test_every_strategy_is_compiled_for_every_target():
    data = pages.results()
    for target in data["targets"]:
        for strategy in pages.STRATEGIES:
            assert pages.program(target, strategy)["target"] == target


def test_a_number_in_prose_is_the_number_in_the_table():
    table = pages.table()
    filled = pages.fill("<!-- tpu: v5e:2x4 / FSDP / wire -->")
    assert filled == f"{wire('v5e:2x4', 'FSDP'):.1f} MiB"
    row = next(line for line in table.splitlines() if line.startswith("| FSDP |"))
    assert f"**{filled.removesuffix(' MiB')}** MiB" in row


def test_an_unknown_target_stops_the_build_with_what_to_use():
    with pytest.raises(pages.TpuPagesError, match=r"target 'v9:1x1'.*nox -s tpu"):
        pages.fill("<!-- tpu: v9:1x1 / FSDP / wire -->")


def test_the_scaling_page_types_no_tpu_number():
    text = SCALING.read_text(encoding="utf-8")
    assert pages.TABLE in text
    assert not re.search(r"\d+(\.\d+)? MiB", text)  # every figure is filled in
    assert len(pages.NUMBER.findall(text)) == 7
    pages.fill(text)  # and every one names a compiled program


def test_the_fsdp_pages_own_step_keeps_the_all_reduce_on_v5e():
    explicit = kinds("v5e:2x4", "FSDP, explicit gather")
    assert "reduce-scatter" not in explicit and explicit["all-reduce"] == 1
    assert wire("v5e:2x4", "FSDP, explicit gather") > wire("v5e:2x4", "FSDP")


def test_the_scaling_pages_claims_about_data_parallelism_hold():
    for target in pages.results()["targets"]:
        assert kinds(target, "data parallel") == {"all-reduce": 1}
    assert wire("v5e:2x4", "data parallel") < wire("v5e:16x16", "data parallel")


def test_the_scaling_pages_claims_about_fsdp_hold():
    dp = wire("cpu", "data parallel")
    # CPU: four all-gathers and a full all-reduce, 1.5 times data parallelism.
    assert kinds("cpu", "FSDP") == {"all-gather": 4, "all-reduce": 1}
    assert wire("cpu", "FSDP") == pytest.approx(1.5 * dp, rel=0.01)
    # v5e:2x4: the kernels gathered in bfloat16, their gradients reduce-scattered, less than DP.
    v5e = pages.program("v5e:2x4", "FSDP")["collectives"]
    big = [c for c in v5e if c["kind"] == "all-gather" and c["result_bytes"] > 2**20]
    assert len(big) == 2 and {c["dtype"] for c in big} == {"bf16"}
    assert kinds("v5e:2x4", "FSDP") == {
        "all-gather": 4,
        "reduce-scatter": 2,
        "all-reduce": 1,
    }
    assert wire("v5e:2x4", "FSDP") < wire("v5e:2x4", "data parallel")
    # v5p:2x2x2: gathers in bfloat16 too, no reduce-scatter.
    v5p = pages.program("v5p:2x2x2", "FSDP")["collectives"]
    assert "bf16" in {c["dtype"] for c in v5p if c["kind"] == "all-gather"}
    assert "reduce-scatter" not in kinds("v5p:2x2x2", "FSDP")
    # 64 and 256 chips: all-reduces only, the kernels among them.
    for target in ("v5e:8x8", "v5e:16x16"):
        assert set(kinds(target, "FSDP")) == {"all-reduce"}
        collectives = pages.program(target, "FSDP")["collectives"]
        dims = {s.split("[")[1] for c in collectives for s in c["shapes"]}
        assert {"4096,1024]", "1024,4096]"} <= dims
    # So the ranking by bytes depends on the target.
    assert wire("v5e:2x4", "FSDP") < dp < wire("cpu", "FSDP")


def test_the_caption_names_each_strategys_mesh():
    assert (
        "data N; model N; 2-D data N/4 \u00d7 model 4; pipeline stage N"
        in pages.table()
    )
    for target, described in pages.results()["targets"].items():
        n = described["devices"]
        meshes = {s: pages.program(target, s)["mesh"] for s in pages.STRATEGIES}
        assert meshes == {
            "data parallel": {"data": n},
            "FSDP": {"data": n},
            "tensor parallel": {"model": n},
            "2-D": {"data": n // 4, "model": 4},
            "pipeline": {"stage": n},
        }


def test_the_model_table_sets_each_formula_beside_its_program():
    text = SCALING.read_text(encoding="utf-8")
    assert pages.MODEL_TABLE in text
    table = pages.fill(pages.MODEL_TABLE)
    rows = [
        line for line in table.splitlines() if line.startswith("| ") and "MiB" in line
    ]
    assert len(rows) == len(pages.STRATEGIES) * len(pages.results()["targets"])
    # v5e:2x4's FSDP: 42.0 formula, 42.1 compiled (bf16 weights), a departure in bold
    row = next(r for r in rows if r.startswith("| FSDP | v5e:2x4 |"))
    assert "/ 42.1 MiB" in row and "**all-gather of bf16 weights" in row
    # data parallelism is as taught everywhere
    assert all("| as taught |" in r for r in rows if r.startswith("| data parallel |"))


def test_the_scaling_pages_formula_prose_matches_the_model():
    """The prose's one-line formulas: taught FSDP sends what data parallelism sends."""
    from docs_build import costmodel as cm

    text = SCALING.read_text(encoding="utf-8")
    assert "2(N \u2212 1)/N \u00b7 P" in text and "the same total" in text
    model = cm.MLP(1024, 4096, 256)
    assert cm.wire_bytes("FSDP", {"data": 8}, model) == cm.wire_bytes(
        "data parallel", {"data": 8}, model
    )


def test_the_three_approaches_page_shows_every_target():
    text = (ROOT / "docs" / "concepts" / "three-approaches.md").read_text(
        encoding="utf-8"
    )
    assert (
        pages.APPROACHES_TABLE in text
        and "The same single all-reduce on every target" in text
    )
    table = pages.fill(pages.APPROACHES_TABLE)
    rows = [
        line
        for line in table.splitlines()
        if line.startswith("| ") and "B sent" in line
    ]
    assert len(rows) == 3
    assert all(row.count("all-reduce of f32[4] over 8 devices") == 3 for row in rows)
