"""The cost model against the compiled programs: every formula, every target, within the
tolerance the scaling page states; and the plans where the compiler departs from the pages."""

import re

import pytest

from docs_build import costmodel as cm
from docs_build.compiled import pages
from docs_build.compiled import targets as tg

DATA = pages.results()
MODEL = cm.MLP(
    DATA["model"]["d"],
    DATA["model"]["hidden"],
    DATA["model"]["batch"],
    DATA["model"]["pipeline_microbatches"],
)
PROGRAMS = {(p["target"], p["strategy"]): p for p in DATA["programs"]}


def base(strategy: str) -> str:
    return strategy.split(",")[0]  # "FSDP, explicit gather" is priced as FSDP


@pytest.mark.parametrize("key", sorted(PROGRAMS), ids=" / ".join)
def test_the_formula_under_the_programs_plan_gives_its_wire_bytes(key):
    program = PROGRAMS[key]
    strategy = base(key[1])
    compiled = sum(s["wire_bytes"] for s in program["summary"].values())
    formula = cm.wire_bytes(strategy, program["mesh"], MODEL, cm.plan_of(program))
    assert formula == pytest.approx(compiled, rel=cm.TOLERANCE)


@pytest.mark.parametrize(
    "key", sorted(k for k in PROGRAMS if k[1] != "pipeline"), ids=" / ".join
)
def test_the_formula_gives_the_state_memory_analysis_reports(key):
    program = PROGRAMS[key]
    compiled = program["memory"]["argument_bytes"]
    formula = cm.state_bytes(base(key[1]), program["mesh"], MODEL)
    assert formula == pytest.approx(compiled, rel=cm.TOLERANCE)
    if key[0] == "cpu":  # no padding on the CPU: exact but for the step counter
        assert 0 <= compiled - formula <= 16


def test_the_compiler_departs_from_the_taught_plan_exactly_here():
    """A JAX or libtpu release that changes a plan fails here, and the page's prose with it."""
    departures = {
        key: cm.plan_of(p).describe(base(key[1]))
        for key, p in PROGRAMS.items()
        if cm.plan_of(p).departs(base(key[1]))
    }
    fsdp = {k[0]: v for k, v in departures.items() if k[1] == "FSDP"}
    assert fsdp == {
        "cpu": "all-gather of f32 weights, all-reduce of gradients",
        "v5e:2x4": "all-gather of bf16 weights, reduce-scatter of gradients",
        "v5p:2x2x2": "all-gather of bf16 weights, all-reduce of gradients",
        "v5e:8x8": "all-reduce of bf16 weights, all-reduce of gradients",
        "v5e:16x16": "all-reduce of f32 weights, all-reduce of gradients",
    }
    pipeline = {k[0] for k in departures if k[1] == "pipeline"}
    assert pipeline == {"v5e:2x4", "v5p:2x2x2", "v5e:8x8", "v5e:16x16"}  # bf16


def test_taught_fsdp_sends_what_data_parallelism_sends():
    """The ring model's claim on the training pages: FSDP's all-gather + reduce-scatter move
    what data parallelism's all-reduce moves; gathering again for the backward pass is 1.5x."""
    for n in (8, 64, 256):
        dp = cm.wire_bytes("data parallel", {"data": n}, MODEL)
        assert cm.wire_bytes("FSDP", {"data": n}, MODEL) == pytest.approx(dp)
        regather = (n - 1) / n * MODEL.params * cm.F32  # the backward pass's gathers
        assert (cm.wire_bytes("FSDP", {"data": n}, MODEL) + regather) / dp == (
            pytest.approx(1.5)
        )


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: cm.wire_bytes("zero", {"data": 8}, MODEL), "unknown strategy 'zero'"),
        (lambda: cm.wire_bytes("2-D", {"data": 8}, MODEL), "axes data and model"),
        (lambda: cm.wire_bytes("FSDP", {"a": 2, "b": 4}, MODEL), "uses one mesh axis"),
        (lambda: cm.wire_bytes("FSDP", {"data": 0}, MODEL), "positive axis sizes"),
        (
            lambda: cm.state_bytes("data parallel", {"data": 3}, MODEL),
            "a batch of 256 does not split over 3 devices: use a multiple of 3",
        ),
        (
            lambda: cm.wire_bytes("tensor parallel", {"model": 3}, MODEL),
            "hidden width 4096 does not split 3 ways",
        ),
        (lambda: cm.state_bytes("pipeline", {"stage": 8}, MODEL), "not modelled"),
        (lambda: cm.MLP(1024, 0, 8), "hidden must be a positive integer, not 0"),
        (lambda: cm.Plan(width=3), "width must be 2 (bf16) or 4 (f32) bytes, not 3"),
        (lambda: cm.Plan(gather="scatter"), "gather must be all-gather or all-reduce"),
    ],
)
def test_bad_input_says_what_to_change(call, message):
    with pytest.raises(cm.CostModelError, match=re.escape(message)):
        call()


def test_dcn_bytes_and_seconds_refuse_what_they_cannot_price():
    model = cm.MLP(1024, 4096, 256)
    with pytest.raises(cm.CostModelError, match="axes slice and data"):
        cm.dcn_bytes({"data": 8}, model)
    with pytest.raises(cm.CostModelError, match="does not split over 48"):
        cm.dcn_bytes({"slice": 3, "data": 16}, model)
    with pytest.raises(cm.CostModelError, match="positive bandwidth"):
        cm.seconds(1.0, 0)
    assert (
        cm.dcn_bytes({"slice": 1, "data": 8}, model) == 0
    )  # one slice: nothing crosses
    assert cm.seconds(cm.V5E.dcn, cm.V5E.dcn) == 1.0


def test_temporaries_follow_their_formula_where_one_is_given():
    """Every compiled program whose temporaries have a formula is within its tolerance; the
    CPU's are exact to a few scalars. Where the formula gives none, say so (None)."""
    data = pages.results()
    m = data["model"]
    model = cm.MLP(m["d"], m["hidden"], m["batch"], m["pipeline_microbatches"])
    checked = 0
    for p in data["programs"]:
        if p["strategy"] not in cm.STRATEGIES:
            continue
        backend = tg.family(p["target"])
        formula = cm.transient_bytes(p["strategy"], p["mesh"], model, backend)
        if formula is None:
            continue
        compiled = p["memory"]["temp_bytes"]
        if backend == "cpu":
            assert abs(compiled - formula) <= cm.TRANSIENT_SLACK, p["strategy"]
        else:
            assert formula <= compiled <= formula * (1 + cm.TRANSIENT_TOLERANCE)
        checked += 1
    # CPU: four strategies; TPU: data parallelism on four targets; GPU: FSDP on four
    assert checked == 4 + 4 + 4
    with pytest.raises(cm.CostModelError, match="backend must be cpu, tpu or gpu"):
        cm.transient_bytes("FSDP", {"data": 8}, model, "ipu")
