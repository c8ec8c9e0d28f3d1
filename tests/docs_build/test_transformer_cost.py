"""The transformer step's activations, FLOPs and time bound (docs_build/transformer_cost.py):
the residuals term by term against print_saved_residuals, the temporaries against the
compiled grid (CPU and H100) within the stated tolerances, TPU labelled unchecked, the FLOPs
against cost_analysis() (a scan's body counted once), the real H100's step against its
bound, the compute-bound threshold derived again by hand, and bad input refused."""

import contextlib
import dataclasses
import io
import math
import re
from pathlib import Path

import pytest

from docs_build import planner as pl
from docs_build import planner_grid as grid
from docs_build import steptime
from docs_build import transformer_cost as tc

GRID = tc.grid()
CHECKED = tc.checked_entries(GRID)
SMALL = dict(vocab=64, d_model=32, heads=4, mlp=128, layers=3, seq=16)
# The largest disagreements `python -m docs_build.transformer_cost` prints, as
# transformer_cost's TOLERANCE comment states them.
MEASURED = {"cpu": 0.085, "gpu": 0.179}


def ids(entry):
    return f"{entry['target']} / {entry['config']} / {tuple(entry['mesh'])}"


def one_device(devices):
    import jax
    from jax.sharding import AxisType

    return jax.make_mesh(
        (1, 1, 1),
        ("data", "fsdp", "tensor"),
        axis_types=(AxisType.Auto,) * 3,
        devices=devices[:1],
    )


# --- what the program keeps ------------------------------------------------------------

BYTES = {"f32": 4, "bf16": 2, "i32": 4, "bool": 1}


def printed_residual_bytes(cfg, batch, devices) -> tuple[int, list[str]]:
    """Bytes of what print_saved_residuals lists for the page's loss, less the parameters
    (the step's arguments), on one device."""
    import jax
    import jax.numpy as jnp
    from flax import nnx
    from jax.ad_checkpoint import print_saved_residuals

    from snippets.advanced.transformer import init, step

    mesh = one_device(devices)
    sharded = init.sharded_init(cfg, mesh)
    graphdef, params = nnx.split(nnx.merge(sharded.graphdef, sharded.init()).model)
    tokens = jnp.zeros((batch, cfg.seq + 1), jnp.int32)

    def loss(params):
        with jax.sharding.use_abstract_mesh(mesh.abstract_mesh):
            return step.loss_fn(nnx.merge(graphdef, params), tokens)

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        print_saved_residuals(loss, params)
    lines = [line for line in out.getvalue().splitlines() if line.strip()]
    total = 0
    for line in lines:
        if "from the argument" in line:
            continue
        dtype, dims = re.match(r"(\w+)\[([\d,]*)\]", line).groups()
        total += BYTES[dtype] * math.prod(int(n) for n in dims.split(",") if n)
    return total, lines


@pytest.mark.parametrize("remat", [True, False], ids=["remat", "no remat"])
@pytest.mark.parametrize(
    "options",
    [{}, {"kv_heads": 2, "gated": True, "tied": True, "mlp": 96}],
    ids=["page's kind", "gqa, gated, tied"],
)
def test_the_residuals_are_what_print_saved_residuals_lists(devices, remat, options):
    from snippets.advanced.transformer.model import Config

    cfg = Config(**{**SMALL, **options, "remat": remat})
    printed, lines = printed_residual_bytes(cfg, 2, devices)
    model = pl.Model.from_config(cfg, batch=2)
    formula = tc.residual_bytes(model, pl.Layout("one device"))
    assert sum(formula.values()) == printed, "\n".join(lines)
    # with remat the layers keep only their float32 inputs: one (L, b, S, d) array
    stacked = f"[{cfg.layers},2,{cfg.seq},{cfg.d_model}]"
    assert any(stacked in line for line in lines)
    if remat:
        assert formula["layers"] == 4 * cfg.layers * 2 * cfg.seq * cfg.d_model


def test_remat_keeps_the_inputs_and_one_layer_recomputed():
    model = pl.model_of(GRID, "page")
    layout = pl.Layout("2-D", data=2, fsdp=2, tensor=2)
    kept = tc.activation_bytes(model, layout, remat=True)
    every = tc.activation_bytes(model, layout, remat=False)
    layer = tc.layer_residuals(model, layout)
    b, seq, d = 4, model.seq, model.d_model
    assert kept["recomputed layer"] == sum(layer.values()) - layer["weights"]
    assert kept["layer weights"] == layer["weights"] == 2 * model.layer_matrices // 2
    assert kept["kept"] - every["kept"] == (
        4 * model.layers * b * seq * d
        - model.layers * sum(layer.values())
        - 5 * b * (model.heads // 2) * seq**2
    )
    # the logits: b x S x vocab/t, in float32 twice and bfloat16 once on CPU
    assert kept["logits"] == (4 + 4 + 2) * b * seq * model.vocab // 2
    assert tc.activation_bytes(model, layout, backend="gpu")["logits"] == (
        (4 + 2) * b * seq * model.vocab // 2
    )


# --- held to the compiled temporaries --------------------------------------------------


@pytest.mark.parametrize("entry", CHECKED, ids=ids)
def test_temp_bytes_hold_to_the_compiled_temporaries(entry):
    formula, compiled = tc.against_compiled(GRID, entry)
    assert compiled == entry["memory"]["temp_bytes"]
    backend = tc.backend_of(entry["target"])
    gap = formula / compiled - 1
    assert abs(gap) <= tc.TOLERANCE[backend], f"{ids(entry)}: {gap:+.1%}"


def test_the_grid_holds_every_checked_target_and_config():
    """CPU on its 8 devices; the H100 on one node of 8 and on 16 and 64 GPUs."""
    targets = {e["target"] for e in CHECKED}
    assert targets == {"cpu", "h100:1x8", "h100:2x8", "h100:8x8"}
    assert set(tc.CHECKED.values()) <= targets
    held = 0  # the 8-device programs of the sizes a target compiles, less EXCLUDED's
    for backend, target in tc.CHECKED.items():
        entries = [e for e in GRID["entries"] if e["target"] == target]
        assert len(entries) == len(grid.configs_of(target)) * 6
        held += sum(
            6 for c in grid.configs_of(target) if (backend, c) not in tc.EXCLUDED
        )
    excluded = {(tc.backend_of(e["target"]), e["config"]) for e in GRID["entries"]}
    assert set(tc.EXCLUDED) <= excluded
    beyond = [e for e in CHECKED if e["target"] in ("h100:2x8", "h100:8x8")]
    assert len(beyond) == 2 * 7 + 1  # and Llama-3-8B on 64 H100s
    assert len(CHECKED) == held + len(beyond)


@pytest.mark.parametrize("backend", sorted(tc.CHECKED))
def test_the_largest_disagreement_is_the_stated_one(backend):
    gap, entry = tc.largest_disagreement(GRID, backend)
    assert round(gap, 3) == MEASURED[backend], ids(entry)
    assert gap <= tc.TOLERANCE[backend]
    assert f"{MEASURED[backend]:.1%}" in Path(tc.__file__).read_text()


@pytest.mark.parametrize("key", sorted(tc.EXCLUDED))
def test_each_exclusion_is_needed(key):
    """An excluded config has an entry beyond the tolerance (else it would be checked)."""
    backend, config = key
    gaps = [
        abs(formula / compiled - 1)
        for e in GRID["entries"]
        if tc.backend_of(e["target"]) == backend and e["config"] == config
        for formula, compiled in [tc.against_compiled(GRID, e)]
    ]
    assert max(gaps) > tc.TOLERANCE[backend]
    assert "gaps the compiler's heap leaves" in tc.EXCLUDED[key]


def test_the_h100_departures_are_needed():
    """The H100's phases differ from the CPU's (no gradient accumulators at the loss, the
    mask made once, a fused MLP, a reduce-scattered head): priced as the CPU's, its
    entries leave the tolerance."""
    worst = max(
        abs(
            tc.temp_bytes(pl.model_of(GRID, e["config"]), pl.entry_layout(e), "cpu")
            / e["memory"]["temp_bytes"]
            - 1
        )
        for e in CHECKED
        if e["target"] == "h100:1x8"
    )
    assert worst > tc.TOLERANCE["gpu"]


def test_tpu_is_labelled_unchecked():
    assert not tc.checked("tpu") and tc.checked("cpu") and tc.checked("gpu")
    assert tc.UNCHECKED["tpu"].startswith("unchecked on TPU")
    assert "tpu" not in tc.TOLERANCE
    # the reason's numbers are the grid's
    entry = next(
        e
        for e in GRID["entries"]
        if e["target"] == "v5e:2x4"
        and e["config"] == "gqa, gated, tied"
        and e["mesh"] == [1, 1, 8]
    )
    layers = tc.residual_bytes(
        pl.model_of(GRID, entry["config"]), pl.entry_layout(entry)
    )["layers"]
    mib = 2**20
    memory = entry["memory"]
    assert memory["temp_bytes"] < layers
    for value in (memory["temp_bytes"], layers, memory["peak_bytes"]):
        assert f"{value / mib:.1f} MiB" in tc.UNCHECKED["tpu"] or (
            f"{value / mib:.0f} MiB" in tc.UNCHECKED["tpu"]
        )
    assert f"{memory['argument_bytes'] / mib:.1f} MiB" in tc.UNCHECKED["tpu"]


# --- FLOPs ------------------------------------------------------------------------------


ROWS = tc.advanced_rows()


def test_the_rows_that_count_flops():
    """CPU and TPU count the page's step; the GPU compile reports none."""
    assert {r["target"] for r in ROWS} == {"cpu", "v5e:2x4", "v5p:2x2x2"}
    assert {r["strategy"] for r in ROWS} == {
        "transformer step, remat",
        "transformer step, no remat",
    }
    for row in ROWS:
        assert set(row["cost"]) >= {"flops", "bytes_accessed"}


@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r['target']} / {r['strategy']}")
def test_counted_flops_hold_to_cost_analysis(row):
    model, layout = tc.advanced_model(row)
    counted = tc.counted_flops(model, layout)
    assert counted == pytest.approx(row["cost"]["flops"], rel=tc.FLOPS_TOLERANCE)
    # every layer's FLOPs are far more than the program's count: its scan body counts once
    every = sum(tc.device_flops(model, layout).values())
    assert every > 2 * row["cost"]["flops"]


def test_remat_adds_a_forward_less_the_down_projection():
    model, layout = tc.advanced_model(ROWS[0])
    on, off = (dataclasses.replace(model, remat=r) for r in (True, False))
    d, m, s, b, n = model.d_model, model.mlp, model.seq, model.batch, layout.devices
    one_layer = (2 * b * s * model.layer_matrices + 4 * b * s * s * d) / n
    extra = tc.counted_flops(on, layout) - tc.counted_flops(off, layout)
    assert extra == pytest.approx(one_layer - 2 * b * s * d * m / n)
    cpu = {r["strategy"]: r["cost"]["flops"] for r in ROWS if r["target"] == "cpu"}
    compiled = cpu["transformer step, remat"] - cpu["transformer step, no remat"]
    # the layer's whole forward again would overcount what the program recomputes
    assert compiled == pytest.approx(extra, rel=0.05)
    assert one_layer > 1.15 * compiled


def compiled_flops(cfg, batch, devices) -> float:
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding

    from snippets.advanced.transformer import init, model, step

    mesh = one_device(devices)
    sharded = init.sharded_init(cfg, mesh)
    tokens = jax.ShapeDtypeStruct(
        (batch, cfg.seq + 1),
        jnp.int32,
        sharding=NamedSharding(mesh, model.mesh_axes(("batch", None))),
    )
    program = step.make_train_step(sharded, mesh).lower(sharded.abstract, tokens)
    return program.compile().cost_analysis()["flops"]


def test_cost_analysis_counts_the_scan_body_once(devices):
    """One layer or three: the compiled count grows by the optimizer's work on the new
    layers only, as counted_flops says; step_flops grows by two layers' products."""
    from snippets.advanced.transformer.model import Config

    fields = dict(vocab=4096, d_model=1024, heads=8, mlp=4096, seq=256)
    found = {}
    for layers in (1, 3):
        cfg = Config(**fields, layers=layers)
        model = pl.Model.from_config(cfg, batch=8)
        layout = pl.Layout("one device")
        found[layers] = (
            compiled_flops(cfg, 8, devices),
            tc.counted_flops(model, layout),
            sum(tc.device_flops(model, layout).values()),
        )
    for compiled, counted, _ in found.values():
        assert counted == pytest.approx(compiled, rel=tc.FLOPS_TOLERANCE)
    (c1, _, all1), (c3, _, all3) = found[1], found[3]
    assert c3 - c1 < 0.05 * c1 < all3 - all1


def test_adamw_flops_per_parameter_are_what_cost_analysis_counts():
    import jax
    import jax.numpy as jnp
    import optax

    tx, n = optax.adamw(1e-2), 1 << 16
    p = jnp.zeros((n,), jnp.float32)

    def update(g, state, p):
        updates, state = tx.update(g, state, p)
        return optax.apply_updates(p, updates), state

    compiled = jax.jit(update).lower(p, tx.init(p), p).compile()
    assert round(compiled.cost_analysis()["flops"] / n) == tc.ADAMW_FLOPS


def test_step_flops_by_hand_for_the_page():
    model = pl.model_of(GRID, "page")
    tokens = model.batch * model.seq
    d, m, v, s = model.d_model, model.mlp, model.vocab, model.seq
    forward = model.layers * (
        2 * tokens * (4 * d * d + 2 * d * m) + 4 * model.batch * s * s * d
    ) + (2 * tokens * d * v)
    f = tc.step_flops(model)
    assert f["forward"] == forward and f["backward"] == 2 * forward
    assert f["recompute"] == model.layers * (
        2 * tokens * (4 * d * d + d * m) + 4 * model.batch * s * s * d
    )
    assert f["optimizer"] == 15 * model.params
    assert tc.model_flops(model) == 3 * forward


# --- the real H100 ----------------------------------------------------------------------


def test_the_real_h100_step_is_slower_than_its_bound():
    bound, measured, flops = tc.card_step_bound()
    record = tc.gpu_card_step()
    assert record["config"] == "page" and measured == record["seconds"]
    assert measured > bound > 0
    assert bound == pytest.approx(flops / steptime.peak("h100"))
    # the GPU's cost_analysis() on the card counted far fewer FLOPs than the step runs
    assert record["flops"] < 0.1 * flops


# --- time ---------------------------------------------------------------------------------

PAGE = pl.model_of(GRID, "page")


@pytest.mark.parametrize("mesh", [(8, 1, 1), (1, 8, 1), (1, 1, 8), (2, 2, 2)], ids=str)
@pytest.mark.parametrize("chip", ["h100", "v5e"])
def test_eight_devices_send_everything_within_their_node(mesh, chip):
    layout = pl.Layout(pl.name_of(*mesh), *mesh)
    sent = tc.networks(PAGE, layout, chip)
    within, between = steptime.FAMILY_NETWORKS[steptime.chip(chip).within_name]
    assert sent[between] == 0
    assert sent[within] == pytest.approx(pl.wire_bytes(PAGE, layout))
    bound = tc.time_bound(PAGE, layout, chip)
    flops = sum(tc.device_flops(PAGE, layout).values())
    assert bound.compute == pytest.approx(flops / steptime.peak(chip))
    assert bound.networks[within] == pytest.approx(
        sent[within] / steptime.chip(chip).within
    )
    assert bound.no_overlap == pytest.approx(bound.compute + bound.networks[within])
    assert bound.perfect_overlap == max(bound.compute, bound.networks[within])
    assert tc.mfu_bound(PAGE, layout, chip) <= bound.mfu_bound <= 1


def test_nodes_split_the_terms_by_the_groups_they_span():
    model = dataclasses.replace(PAGE, batch=32)
    layout = pl.Layout("x", data=4, fsdp=2, tensor=2)
    terms = pl.wire_terms(model, layout)
    sent = tc.networks(model, layout, "h100", per_node=4)
    # tensor (2) and fsdp x tensor (4) fit a node of 4; data x fsdp x tensor does not
    assert sent["nvlink"] == pytest.approx(terms["activations"] + terms["gathers"])
    assert sent["ib"] == pytest.approx(terms["gradients"] + terms["loss"])
    assert tc.networks(model, layout, "h100", per_node=16)["ib"] == 0


def test_the_threshold_derived_by_hand_for_data_parallelism():
    """8-way data parallelism of the page's model on H100s: compute per sequence is three
    forward passes and the recomputation, the bytes are the gradients' all-reduce, which
    no batch changes. Compute-bound above b* = (wire/W - adam/C) / (flops per sequence/C)."""
    layout = pl.Layout("data", data=8)
    h100 = steptime.chip("h100")
    d, m, v, s, layers = PAGE.d_model, PAGE.mlp, PAGE.vocab, PAGE.seq, PAGE.layers
    matrices = 4 * d * d + 2 * d * m
    forward = layers * (2 * s * matrices + 4 * s * s * d) + 2 * s * d * v
    recompute = layers * (2 * s * (matrices - d * m) + 4 * s * s * d)
    per_sequence = 3 * forward + recompute
    adam = 15 * PAGE.params
    wire = pl.wire_bytes(dataclasses.replace(PAGE, batch=8), layout)
    expected = (wire / h100.within - adam / h100.bf16_flops) / (
        per_sequence / h100.bf16_flops
    )
    found = tc.compute_bound_batch(PAGE, layout, "h100")
    assert found == pytest.approx(expected)
    # and the bound agrees on each side of it
    for b, compute_bound in ((math.floor(found), False), (math.ceil(found) + 1, True)):
        bound = tc.time_bound(dataclasses.replace(PAGE, batch=8 * b), layout, "h100")
        assert (bound.compute >= bound.communication) is compute_bound


@pytest.mark.parametrize("mesh", [(1, 8, 1), (2, 2, 2), (1, 1, 8), (4, 1, 2)], ids=str)
def test_the_threshold_is_where_the_bound_turns(mesh):
    layout = pl.Layout(pl.name_of(*mesh), *mesh)
    found = tc.compute_bound_batch(PAGE, layout, "v5e")
    rows = mesh[0] * mesh[1]
    if math.isinf(found):
        bound = tc.time_bound(
            dataclasses.replace(PAGE, batch=rows * 4096), layout, "v5e"
        )
        assert bound.compute < bound.communication
        return
    above = tc.time_bound(
        dataclasses.replace(PAGE, batch=rows * (math.ceil(found) + 1)), layout, "v5e"
    )
    assert above.compute >= above.communication
    if found >= 1:
        below = tc.time_bound(
            dataclasses.replace(PAGE, batch=rows * math.floor(found)), layout, "v5e"
        )
        assert below.compute < below.communication


# --- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda: tc.activation_bytes(
                pl.Model(64, 32, 4, 128, 2, 16, 8), pl.Layout("t", tensor=8)
            ),
            "heads 4 does not split 8 ways (tensor): use a multiple of 8",
        ),
        (
            lambda: tc.temp_bytes(
                pl.Model(64, 32, 4, 128, 2, 16, 8, kv_heads=2), pl.Layout("t", tensor=4)
            ),
            "kv_heads 2 does not split 4 ways (tensor): use a multiple of 4",
        ),
        (
            lambda: tc.activation_bytes(
                pl.Model(64, 36, 4, 128, 2, 16, 8), pl.Layout("f", fsdp=8)
            ),
            "d_model 36 does not split 8 ways (fsdp): use a multiple of 8",
        ),
        (
            lambda: tc.device_flops(
                pl.Model(64, 64, 8, 100, 2, 16, 8), pl.Layout("t", tensor=8)
            ),
            "mlp 100 does not split 8 ways (tensor): use a multiple of 8",
        ),
        (
            lambda: tc.time_bound(
                pl.Model(64, 32, 4, 128, 2, 16, 6),
                pl.Layout("x", data=2, fsdp=2),
                "h100",
            ),
            "a batch of 6 does not split over data x fsdp = 4 devices: use a multiple of 4",
        ),
        (
            lambda: tc.time_bound(PAGE, pl.Layout("data", data=8), "h200"),
            "unknown chip 'h200': use one of ['a100', 'h100', 'v5e', 'v5p']",
        ),
        (
            lambda: tc.compute_bound_batch(PAGE, pl.Layout("data", data=8), "tpu"),
            "unknown chip 'tpu'",
        ),
        (
            lambda: pl.Model(64, 0, 4, 128, 2, 16, 8),
            "d_model must be a positive integer, not 0",
        ),
        (
            lambda: pl.Model(64, 32, 4, 128, 2, -16, 8),
            "seq must be a positive integer, not -16",
        ),
        (
            lambda: tc.activation_bytes(PAGE, pl.Layout("pipeline", stages=8)),
            "the transformer step has no pipeline; give data, fsdp and tensor sizes",
        ),
        (
            lambda: tc.temp_bytes(PAGE, pl.Layout("data", data=8), "trn1"),
            "backend must be one of ('cpu', 'gpu', 'tpu'), not 'trn1'",
        ),
        (
            lambda: tc.networks(PAGE, pl.Layout("data", data=8), "h100", per_node=0),
            "per_node must be a positive integer, not 0",
        ),
        (
            lambda: tc.networks(
                pl.Model(96, 48, 6, 96, 2, 16, 4),
                pl.Layout("x", data=2, tensor=6),
                "h100",
                per_node=4,
            ),
            "tensor 6 does not tile nodes of 4 devices: make one divide the other",
        ),
        (
            lambda: tc.step_flops(dataclasses.replace(PAGE, optimizer="sgd")),
            "the optimizer's FLOPs are measured for ['adamw'], not 'sgd'",
        ),
    ],
)
def test_bad_input_says_what_to_change(call, message):
    with pytest.raises(pl.CostModelError, match=re.escape(message)):
        call()
