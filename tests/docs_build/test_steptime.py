"""The step-time lower bound: published peaks as data, the MLP step's FLOPs against the
compiled programs' cost_analysis(), the bounds' arithmetic, the compute-bound threshold, bad
input refused, and the scaling page's generated table held to the data."""

import math
import re

import pytest

from docs_build import costmodel as cm
from docs_build import steptime as st
from docs_build.compiled import pages
from docs_build.compiled import results as rs
from docs_build.compiled import targets as tg

DATA = pages.results()
MODEL = cm.MLP(
    DATA["model"]["d"],
    DATA["model"]["hidden"],
    DATA["model"]["batch"],
    DATA["model"]["pipeline_microbatches"],
)
TRAINING = ("data parallel", "FSDP", "tensor parallel", "2-D")
COUNTED = [  # the programs whose backend reports FLOPs (CPU, TPU), but the pipeline
    p
    for p in DATA["programs"]
    if p["cost"]["flops"] is not None and p["strategy"].split(",")[0] in TRAINING
]


def base(strategy: str) -> str:
    return strategy.split(",")[0]  # "FSDP, explicit gather" does FSDP's work


# --- the published numbers --------------------------------------------------------------


@pytest.mark.parametrize("key", sorted(cm.LINKS))
def test_every_chip_has_its_peak_and_links_with_a_source(key):
    c = cm.LINKS[key]
    assert c.source and c.url.startswith("https://")
    assert ("Google" in c.source) == (c.within_name == "ICI")  # TPU figures from Google
    # units: FLOP/s in the hundreds of teraFLOPS, bytes/s between 1 GB/s and 1 TB/s
    assert 1e14 < c.bf16_flops < 2e15
    assert 1e9 < c.between < c.within < 1e12
    if (
        c.f32_flops is not None
    ):  # "a float32 product runs no faster", as the caption says
        assert 1e12 < c.f32_flops < c.bf16_flops
    if c.memory_bytes is not None:
        assert 1e10 < c.memory_bytes < 2e11 and 1e11 < c.memory_per_second < 1e13


def test_the_new_numbers_are_the_published_ones():
    """Each value as its source prints it (docs_build/costmodel.py quotes the line)."""
    assert cm.V5E.bf16_flops == 197e12 and cm.V5E.f32_flops is None
    assert (
        cm.Links(
            chip="v5p",
            within=1200e9
            / 2,  # "Bidirectional ... ICI bandwidth per chip (GBps) | 1200"
            between=50e9 / 8,  # "DCN bandwidth per chip (Gbps) | 50"
            within_name="ICI",
            between_name="DCN",
            source="Google Cloud's TPU v5p documentation",
            url="https://cloud.google.com/tpu/docs/v5p",
            memory_bytes=95e9,
            memory_per_second=2765e9,
            bf16_flops=459e12,
        )
        == cm.V5P
    )
    assert cm.H100.bf16_flops == 1979e12 / 2  # dense: half the figure with sparsity
    assert (cm.H100.f32_flops, cm.A100.bf16_flops, cm.A100.f32_flops) == (
        67e12,
        312e12,
        19.5e12,
    )


def test_each_tpu_target_is_priced_with_its_own_chip():
    assert rs.links("v5p:2x2x2") is cm.V5P
    assert rs.links("v5e:16x16") is rs.links("2 slices of v5e:2x4") is cm.V5E
    with pytest.raises(rs.CompiledResultsError, match="no published link speeds"):
        rs.links("v4:2x2x2")


# --- FLOPs against the compiled programs ------------------------------------------------


def test_the_backends_that_count_flops():
    """CPU and TPU report cost_analysis() FLOPs for every program; the GPU compile none."""
    for p in DATA["programs"]:
        counted = p["cost"]["flops"] is not None
        assert counted == (tg.family(p["target"]) != "gpu"), p["target"]


@pytest.mark.parametrize("p", COUNTED, ids=lambda p: f"{p['target']} / {p['strategy']}")
def test_the_flops_formula_holds_to_the_compiled_count(p):
    strategy = base(p["strategy"])
    compiled = p["cost"]["flops"]
    formula = st.training_flops(strategy, p["mesh"], MODEL)
    devices = math.prod(p["mesh"].values())
    tolerance = st.FLOPS_TOLERANCE if devices == 8 else st.FLOPS_TOLERANCE_LARGE
    assert formula == pytest.approx(compiled, rel=tolerance)
    # the compute bound's FLOPs are a floor of what the program does
    assert st.matmul_flops(strategy, p["mesh"], MODEL) < compiled


def test_six_matmuls_would_overcount_the_step():
    """The usual 6 * parameters * tokens counts the input's gradient too: on tensor
    parallelism, where Adam is small, that rule lies above every compiled count."""
    for p in COUNTED:
        if base(p["strategy"]) == "tensor parallel":
            devices = math.prod(p["mesh"].values())
            six = 6 * 2 * MODEL.d * MODEL.hidden * MODEL.batch / devices
            assert six > 1.05 * p["cost"]["flops"], p["target"]


def test_both_backends_count_a_loop_body_once():
    """The pipeline runs M + S - 1 ticks of one stage's forward pass, in a loop; CPU and
    TPU both report about one tick's FLOPs (4 * rows * d * hidden for one microbatch), so
    its count is not the step's (and not modelled). The four training steps have no loop:
    their counts match the formula above."""
    rows = MODEL.batch // MODEL.microbatches
    one_tick = 4 * rows * MODEL.d * MODEL.hidden
    pipelines = [
        p
        for p in DATA["programs"]
        if p["strategy"] == "pipeline" and p["cost"]["flops"]
    ]
    assert {tg.family(p["target"]) for p in pipelines} == {"cpu", "tpu"}
    for p in pipelines:
        assert p["cost"]["flops"] == pytest.approx(one_tick, rel=0.02)
    with pytest.raises(st.StepTimeError, match="pipeline's FLOPs are not modelled"):
        st.matmul_flops("pipeline", {"stage": 8}, MODEL)


# --- the bounds ---------------------------------------------------------------------------


def test_the_bounds_add_and_take_the_largest():
    b = st.bound(459e12, {"ici": 600e9 * 2, "dcn": 50e9 / 8 * 0.5}, "v5p")
    assert b.compute == 1.0 and b.networks == {"ici": 2.0, "dcn": 0.5}
    assert b.no_overlap == 3.5 and b.perfect_overlap == 2.0 and b.mfu_bound == 0.5
    compute_bound = st.bound(989.5e12 * 3, {"nvlink": 450e9, "ib": 0}, "h100")
    assert compute_bound.perfect_overlap == 3.0 and compute_bound.mfu_bound == 1.0
    assert st.compute_seconds(19.5e12, "a100", "float32") == 1.0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: st.compute_seconds(0, "v5e"), "flops must be positive, not 0.0"),
        (lambda: st.compute_seconds(-1e9, "v5e"), "flops must be positive"),
        (lambda: st.compute_seconds(float("nan"), "v5e"), "flops must be finite"),
        (lambda: st.compute_seconds("1e9", "v5e"), "flops must be a number"),
        (lambda: st.compute_seconds(1e30, "h100"), "more than a day per step"),
        (lambda: st.compute_seconds(1e9, "tpu"), "unknown chip 'tpu'"),
        (lambda: st.compute_seconds(1e9, "v5e", "fp8"), "dtype must be one of"),
        (
            lambda: st.compute_seconds(1e9, "v5p", "float32"),
            "publishes no float32 peak for v5p: use bfloat16",
        ),
        (lambda: st.network_seconds({"ici": -1}, "v5e"), "bytes over ici must be >= 0"),
        (
            lambda: st.network_seconds({"ib": 1e6}, "v5e"),
            "sends over ici and dcn, not 'ib'",
        ),
        (lambda: st.network_seconds({"dcn": 1e18}, "v5p"), "bytes, not bits"),
        (lambda: st.network_seconds({"nvlink": math.inf}, "h100"), "must be finite"),
        (
            lambda: st.compute_bound_rows("tensor parallel", 8, "v5e", MODEL),
            "derived for data parallel and FSDP",
        ),
        (lambda: st.compute_bound_rows("FSDP", 1, "v5e", MODEL), "at least 2 devices"),
    ],
)
def test_bad_input_is_refused_with_a_message(call, message):
    with pytest.raises(st.StepTimeError, match=re.escape(message)):
        call()


# --- the compute-bound threshold -------------------------------------------------------


@pytest.mark.parametrize("strategy", ["data parallel", "FSDP"])
@pytest.mark.parametrize("key", sorted(cm.LINKS))
@pytest.mark.parametrize("devices", [8, 64])
def test_at_the_threshold_compute_equals_communication(strategy, key, devices):
    rows = st.compute_bound_rows(strategy, devices, key, MODEL)
    within = cm.LINKS[key].within_name.lower()
    within = {"ici": "ici", "nvlink": "nvlink"}[within]

    def times(b: float) -> tuple[float, float]:
        flops = st.MATMULS * 2 * b * MODEL.d * MODEL.hidden
        sizing = cm.MLP(MODEL.d, MODEL.hidden, devices)  # wire does not depend on batch
        wire = cm.wire_bytes(strategy, {"data": devices}, sizing)
        return st.compute_seconds(flops, key), st.network_seconds({within: wire}, key)[
            within
        ]

    compute, communication = times(rows)
    assert compute == pytest.approx(communication, rel=1e-9)
    below, above = times(0.9 * rows), times(1.1 * rows)
    assert below[0] < below[1] and above[0] > above[1]
    # and through the step's own FLOPs, at whole batches either side of the threshold
    for batch, bound_by_compute in (
        (math.floor(rows) * devices, False),
        (math.ceil(rows) * devices, True),
    ):
        model = cm.MLP(MODEL.d, MODEL.hidden, batch)
        flops = st.matmul_flops(strategy, {"data": devices}, model)
        sent = cm.wire_bytes(strategy, {"data": devices}, model)
        b = st.bound(flops, {within: sent}, key)
        assert (b.compute > b.networks[within]) == bound_by_compute


def test_the_threshold_is_a_multiple_of_the_chips_flops_per_byte():
    """The Scaling Book's form, b > C / W: here 2(N-1)/N * P * 4 bytes / (10 d hidden)
    times C / W, that is about 1.6 (N-1)/N * C / W for this MLP (f32 gradients, forward and
    backward matmuls)."""
    for key, c in cm.LINKS.items():
        rows = st.compute_bound_rows("data parallel", 8, key, MODEL)
        factor = 2 * 7 / 8 * MODEL.params * cm.F32 / (10 * MODEL.d * MODEL.hidden)
        assert rows == pytest.approx(factor * c.bf16_flops / c.within, rel=1e-12)
        assert factor == pytest.approx(1.6 * 7 / 8, rel=1e-3)


@pytest.mark.parametrize("key", sorted(cm.LINKS))
@pytest.mark.parametrize(
    ("strategy", "mesh"),
    [
        ("data parallel", {"data": 8}),
        ("FSDP", {"data": 8}),
        ("tensor parallel", {"model": 8}),
        ("2-D", {"data": 2, "model": 4}),
        ("2-D", {"data": 4, "model": 2}),
    ],
)
def test_any_layouts_threshold_is_where_compute_meets_its_links(key, strategy, mesh):
    """compute_bound_batch for every layout: where it is finite, the step's own matmul
    FLOPs and ring-model bytes (steptime.bound on costmodel.wire_bytes) change places
    between the whole batches either side of it; where it is inf, communication wins at
    every batch from 1 to 2^20 rows per device."""
    within = {"ICI": "ici", "NVLink": "nvlink"}[cm.LINKS[key].within_name]
    data = mesh.get("data", 1)
    rows = st.compute_bound_batch(strategy, mesh, key, MODEL)

    def compute_wins(rows_per_device: int) -> bool:
        model = cm.MLP(MODEL.d, MODEL.hidden, rows_per_device * data)
        b = st.bound(
            st.matmul_flops(strategy, mesh, model),
            {within: cm.wire_bytes(strategy, mesh, model)},
            key,
        )
        return b.compute > b.networks[within]

    if math.isinf(rows):
        assert not any(compute_wins(2**k) for k in range(21))
    else:
        assert rows > 1
        below, above = math.ceil(rows) - 1, math.floor(rows) + 1
        assert not compute_wins(below) and compute_wins(above)


def test_data_parallel_and_fsdps_threshold_is_one_derivation():
    for key in cm.LINKS:
        for strategy in ("data parallel", "FSDP"):
            assert st.compute_bound_rows(strategy, 8, key, MODEL) == pytest.approx(
                st.compute_bound_batch(strategy, {"data": 8}, key, MODEL), rel=1e-12
            )


def test_the_thresholds_closed_forms():
    """Tensor parallelism: 10 d hidden / (N C) per row against 2(N-1)/N 4 d / W, whatever
    the batch, so inf unless hidden > 8 (N-1) C / (10 W); 2-D: b* = w0 / (W k - w1)."""
    for key, c in cm.LINKS.items():
        C, W = c.bf16_flops, c.within
        wide = st.compute_bound_batch("tensor parallel", {"model": 8}, key, MODEL)
        needed = 8 * 7 * C / (10 * W)
        assert math.isinf(wide) == (MODEL.hidden <= needed), key
        huge = cm.MLP(MODEL.d, math.ceil(needed / 8) * 8 + 8, MODEL.batch)
        assert st.compute_bound_batch("tensor parallel", {"model": 8}, key, huge) == 0
        held = (2 * MODEL.d * MODEL.hidden + MODEL.hidden) / 4 + MODEL.d
        w0 = 2 * (2 - 1) / 2 * held * cm.F32
        w1 = 2 * 3 / 4 * MODEL.d * cm.F32
        k = 10 * MODEL.d * MODEL.hidden / 4 / C
        expected = w0 / (W * k - w1) if W * k > w1 else math.inf
        got = st.compute_bound_batch("2-D", {"data": 2, "model": 4}, key, MODEL)
        assert got == pytest.approx(expected, rel=1e-9)


def test_a_compiled_plan_moves_fsdps_threshold():
    """v5e's FSDP program gathers bf16 weights and reduce-scatters (3/4 of data
    parallelism's bytes); v5p's gathers bf16 and all-reduces (5/4): the threshold follows."""
    dp = st.compute_bound_batch("data parallel", {"data": 8}, "v5e", MODEL)
    bf16_rs = cm.Plan(width=2)
    bf16_ar = cm.Plan(gradients="all-reduce", width=2)
    for plan, ratio in ((bf16_rs, 0.75), (bf16_ar, 1.25)):
        got = st.compute_bound_batch("FSDP", {"data": 8}, "v5e", MODEL, plan)
        assert got == pytest.approx(ratio * dp, rel=1e-3)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: st.compute_bound_batch("pipeline", {"stage": 8}, "v5e", MODEL),
            "pipeline's FLOPs are not modelled",
        ),
        (
            lambda: st.compute_bound_batch("data parallel", {"data": 1}, "v5e", MODEL),
            "at least 2 devices",
        ),
        (
            lambda: st.compute_bound_batch("2-D", {"data": 8}, "v5e", MODEL),
            "2-D needs a mesh with axes data and model",
        ),
        (
            lambda: st.compute_bound_batch("FSDP", {"data": 3}, "v5e", MODEL),
            "does not split over 3 devices",
        ),
    ],
)
def test_a_threshold_refuses_what_it_cannot_price(call, message):
    with pytest.raises(cm.CostModelError, match=re.escape(message)):
        call()


# --- the scaling page ---------------------------------------------------------------------

PAGE = (tg.HERE.parents[1] / "docs" / "training" / "scaling.md").read_text(
    encoding="utf-8"
)


def _rows(table: str) -> list[list[str]]:
    return [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in table.splitlines()
        if line.startswith("| ") and not line.startswith("| target")
    ]


def test_the_page_shows_the_time_table_and_the_threshold():
    assert pages.TIME_TABLE in PAGE and "<!-- time-threshold: 8 -->" in PAGE
    # "agree within 1.5% on 8 devices": the tolerance test_the_flops_formula... holds
    assert f"agree within {st.FLOPS_TOLERANCE:.1%} on 8 devices" in PAGE
    # "send the same bytes whatever the batch"
    for strategy in pages.TIME_STRATEGIES:
        small, large = (cm.MLP(MODEL.d, MODEL.hidden, b) for b in (8, 8 * 4096))
        assert cm.wire_bytes(strategy, {"data": 8}, small) == cm.wire_bytes(
            strategy, {"data": 8}, large
        )
    filled = pages.fill(PAGE)
    assert pages.time_table() in filled and pages.threshold_text(8) in filled


def test_every_number_in_the_time_table_is_the_datas():
    table = pages.time_table()
    rows = _rows(table)
    expected = [
        (t, s)
        for t in DATA["targets"]
        if tg.family(t) != "cpu"
        for s in pages.TIME_STRATEGIES
    ]
    assert [(r[0], r[1]) for r in rows] == expected
    for row in rows:
        p = rs.program(row[0], row[1])
        b = pages.step_bound(p)
        family = tg.FAMILIES[tg.family(row[0])]
        assert row[2] == pages._us(b.compute)
        assert row[3].endswith(pages._us(b.networks[family.within]))
        assert row[4].endswith(pages._us(b.networks[family.between]))
        assert row[5] == pages._us(b.perfect_overlap)
        assert row[6] == pages._percent(b.mfu_bound)
        # compute: the matmuls at the chip's bf16 peak
        chip = cm.LINKS[pages.chip_key(row[0])]
        flops = (
            10 * MODEL.batch * MODEL.d * MODEL.hidden / math.prod(p["mesh"].values())
        )
        assert b.compute == pytest.approx(flops / chip.bf16_flops, rel=1e-12)
    for c in {cm.LINKS[pages.chip_key(t)] for t, _ in expected}:
        assert f"{c.chip}: {c.source}" in table


def test_the_pages_claims_about_the_table():
    """ "In every row the links, not the matrix units, set the bound", with 32 rows or
    fewer per device; the threshold sentence names every chip."""
    for target in DATA["targets"]:
        if tg.family(target) == "cpu":
            continue
        for strategy in pages.TIME_STRATEGIES:
            p = rs.program(target, strategy)
            b = pages.step_bound(p)
            assert b.communication > b.compute and b.mfu_bound < 1
            assert MODEL.batch / p["mesh"]["data"] <= 32
    text = pages.threshold_text(8)
    for key, rows in pages.threshold_rows(8).items():
        assert f"{rows:,.0f} " in text and cm.LINKS[key].chip in text
        assert rows > 32  # far above the site's step
