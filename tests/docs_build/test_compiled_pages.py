"""docs_build.compiled.pages: the TPU-compiled table and the numbers in prose come from one file,
and the claims the scaling page makes about them hold for the committed results, so a new
compiler that changes them fails here instead of leaving the page wrong."""

import re
from pathlib import Path

import pytest

from docs_build.compiled import pages
from docs_build.compiled.results import family_of

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
    with pytest.raises(
        pages.CompiledResultsError, match=r"target 'v9:1x1'.*nox -s tpu"
    ):
        pages.fill("<!-- tpu: v9:1x1 / FSDP / wire -->")


def test_the_scaling_page_types_no_tpu_number():
    text = SCALING.read_text(encoding="utf-8")
    assert pages.TABLE in text
    # every figure is filled in (a marker may name an option, "combine up to 1 MiB")
    assert not re.search(r"\d+(\.\d+)? MiB", pages.NUMBER.sub("", text))
    assert len(pages.NUMBER.findall(text)) == 15
    pages.fill(text)  # and every one names a compiled program


def test_the_fsdp_pages_own_step_keeps_the_all_reduce_on_v5e():
    explicit = kinds("v5e:2x4", "FSDP, explicit gather")
    assert "reduce-scatter" not in explicit and explicit["all-reduce"] == 1
    assert wire("v5e:2x4", "FSDP, explicit gather") > wire("v5e:2x4", "FSDP")


def test_the_scaling_pages_claims_about_data_parallelism_hold():
    from docs_build import costmodel as cm

    for target in pages.results()["targets"]:
        p = pages.program(target, "data parallel")
        if family_of(target) != "gpu":
            assert kinds(target, "data parallel") == {"all-reduce": 1}
            continue
        # "on the GPUs the same gradients travel in two all-reduces, each about half of
        # them ... the bytes are the same"
        assert kinds(target, "data parallel") == {"all-reduce": 2}
        sizes = [c["result_bytes"] for c in p["collectives"]]
        assert max(sizes) < 1.01 * min(sizes)
        model = cm.MLP(1024, 4096, 256)
        assert sum(sizes) == pytest.approx(model.params * 4, rel=1e-3)
    assert wire("v5e:2x4", "data parallel") < wire("v5e:16x16", "data parallel")


GPUS = [t for t in pages.results()["targets"] if family_of(t) == "gpu"]


def steps_with_explicit() -> list[str]:
    return [*pages.STRATEGIES, "FSDP, explicit gather"]


def test_the_scaling_pages_claims_about_gpus_hold():
    """FSDP as taught on every GPU target; no plan change from 8 to 64 GPUs; every
    collective of the multi-node programs reaches across nodes but 2-D's model axis."""
    from docs_build import costmodel as cm
    from docs_build.compiled import plot

    for target in GPUS:
        fsdp = pages.program(target, "FSDP")
        assert not cm.plan_of(fsdp).departs("FSDP"), target
        assert kinds(target, "FSDP") == {
            "all-gather": 2,
            "reduce-scatter": 1,
            "all-reduce": 1,  # the loss
        }
        gathered = [c for c in fsdp["collectives"] if c["kind"] == "all-gather"]
        assert {c["dtype"] for c in gathered} == {"f32"}
        assert wire(target, "FSDP") == pytest.approx(
            wire(target, "data parallel"), rel=1e-3
        )
        explicit = kinds(target, "FSDP, explicit gather")
        assert "reduce-scatter" not in explicit and explicit["all-reduce"] == 2
    # "and the same on the A100 node": the same kinds of collective, the same bytes
    for strategy in pages.STRATEGIES:
        assert kinds("a100:1x8", strategy) == kinds("h100:1x8", strategy)
        assert wire("a100:1x8", strategy) == pytest.approx(wire("h100:1x8", strategy))
    # "Compiled for the A100 node ... overlap nothing ... all but one of them are
    # synchronous, where the H100 programs overlap some"
    a100 = [pages.program("a100:1x8", s) for s in steps_with_explicit()]
    h100 = [pages.program("h100:1x8", s) for s in steps_with_explicit()]
    assert all(f["matmuls"] == 0 for p in a100 for f in p["in_flight"])
    forms = [c["form"] for p in a100 for c in p["collectives"]]
    assert forms.count("async") == 1 and len(forms) > 10
    assert any(f["matmuls"] for p in h100 for f in p["in_flight"])
    # the plot: no ring, and every compiled point on its formula
    assert plot.plan_changes(family="gpu") == []
    for (_, strategy), points in plot.series(family="gpu").items():
        for point in points:
            assert point["compiled"] == pytest.approx(
                point["formula"], rel=cm.TOLERANCE
            ), (strategy, point["target"])
    for target in ("h100:2x8", "h100:8x8"):
        for strategy in pages.STRATEGIES:
            for c in pages.program(target, strategy)["collectives"]:
                # 2-D's all-reduce over "model": groups of 4 consecutive GPUs
                within = strategy == "2-D" and "data" not in c["replica_groups"]
                assert c["network"] == ("nvlink" if within else "ib"), (target, c)
    # "FSDP keeps both kernels gathered whole ... within the tolerance on every GPU target"
    said = " ".join(SCALING.read_text(encoding="utf-8").split())
    assert "within the tolerance on every GPU target" in said
    model = cm.MLP(1024, 4096, 256)
    for target in GPUS:
        temp = pages.program(target, "FSDP")["memory"]["temp_bytes"]
        formula = cm.transient_bytes("FSDP", {"data": 8}, model, "gpu")
        assert formula <= temp <= formula * (1 + cm.TRANSIENT_TOLERANCE)


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
    targets = pages.results()["approaches"]["targets"]
    assert {family_of(t) for t in targets} == {"cpu", "tpu", "gpu"}
    assert all(
        row.count("all-reduce of f32[4] over 8 devices") == len(targets) for row in rows
    )


def test_the_gpu_options_section_says_what_the_programs_show():
    from docs_build.compiled import steps

    text = SCALING.read_text(encoding="utf-8")
    said = " ".join(text.split())
    assert pages.OPTIONS_TABLE in text
    target = "h100:1x8"

    def get(strategy, option=None):
        return pages.program(
            target, strategy if option is None else f"{strategy}, {option}"
        )

    small, big, unscheduled = steps.GPU_OPTIONS
    for strategy in ("data parallel", "FSDP"):
        default = get(strategy)
        # "The bytes sent are the same under every option"
        for option in steps.GPU_OPTIONS:
            assert pages.wire_mib(get(strategy, option)) == pytest.approx(
                pages.wire_mib(default), rel=1e-3
            ), option
        # "Without the latency-hiding scheduler every collective is synchronous and
        # nothing overlaps"
        flat = get(strategy, unscheduled)
        assert {c["form"] for c in flat["collectives"]} == {"sync"}
        assert flat["in_flight"] == []
        assert flat["extra"]["options"] == steps.GPU_OPTIONS[unscheduled]
    assert small == "combine up to 1 MiB" and big == "combine up to 1 GiB"
    dp, one, many = (
        get("data parallel"),
        get("data parallel", big),
        get("data parallel", small),
    )
    # "Raised to 1 GiB ... one all-reduce, and the temporaries double ... and no
    # multiplication runs while it travels"
    assert kinds(target, "data parallel, " + big) == {"all-reduce": 1}
    assert one["memory"]["temp_bytes"] == pytest.approx(
        2 * dp["memory"]["temp_bytes"], rel=0.01
    )
    assert [f["matmuls"] for f in one["in_flight"]] == [0]
    # "Lowered to 1 MiB ... three all-reduces, the temporaries fall ... and more of the
    # backward pass overlaps them"
    assert kinds(target, "data parallel, " + small) == {"all-reduce": 3}
    assert many["memory"]["temp_bytes"] < dp["memory"]["temp_bytes"] / 100
    overlapped = lambda p: sum(1 for f in p["in_flight"] if f["matmuls"])  # noqa: E731
    assert overlapped(many) > overlapped(dp)
    # "For FSDP the large threshold merges the two weight gathers into one synchronous
    # all-gather"
    fsdp = get("FSDP", big)
    gathers = [c for c in fsdp["collectives"] if c["kind"] == "all-gather"]
    assert len(gathers) == 1 and gathers[0]["form"] == "sync"
    assert kinds(target, "FSDP")["all-gather"] == 2
    # the two schedules the section shows: a matmul between the first all-reduce's start
    # and its done; without the scheduler, synchronous all-reduces and nothing during them
    assert pages.SCHEDULE.findall(text) == [
        (target, "data parallel"),
        (target, "data parallel, " + unscheduled),
    ]
    ops = [row[0] for row in get("data parallel")["schedule"]]
    assert ops == [
        "all-reduce-start",
        "matmul",
        "all-reduce-done",
        "all-reduce-start",
        "all-reduce-done",
    ]
    ops = [row[0] for row in get("data parallel", unscheduled)["schedule"]]
    assert ops == ["all-reduce", "matmul", "all-reduce"]
    block = pages.fill(f"<!-- gpu-schedule: {target} / data parallel -->")
    assert block.startswith("```{.text") and "    1 matmul" in block
    for phrase in (
        "a matmul runs while it travels",
        "each all-reduce is one synchronous instruction, and nothing runs during it",
        "The bytes sent are the same under every option",
        "one all-reduce, and the temporaries double",
        "it sends them in three all-reduces",
        "Without the latency-hiding scheduler every collective is synchronous",
        "merges the two weight gathers into one synchronous all-gather",
        "Compiled for the A100 node, with XLA's defaults, these steps overlap nothing",
    ):
        assert phrase in said, phrase


def test_the_dtype_split_shares_a_tuples_bytes_by_size():
    """The mixed precision page's tpu-dtypes table: a collective over a tuple of arrays
    shares its bytes among them by their sizes, each run counted."""
    p = {
        "collectives": [
            {
                "kind": "all-gather",
                "shapes": ["f32[4]", "bf16[8]"],
                "wire_bytes": 64.0,
                "runs": 2,
            }
        ]
    }
    assert pages.dtype_bytes(p) == {
        ("all-gather", "f32"): 64.0,
        ("all-gather", "bf16"): 64.0,
    }
    assert pages.bf16_share(p, "all-gather") == 0.5
    assert pages.bf16_share(p, "all-reduce") == 0.0
