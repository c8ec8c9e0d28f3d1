"""The "Beyond the basics" pages' programs compiled for TPU and GPU: complete, consistent, the
CPU rows what this environment compiles, and every claim the pages make about them true."""

import math
from pathlib import Path

import jax
import pytest

from docs_build import hlo
from docs_build.compiled import advanced, driver, pages
from docs_build.compiled import targets as tg
from docs_build.compiled.results import results

ROOT = Path(__file__).resolve().parents[2]
RESULTS = results()
GROUP = RESULTS["advanced"]
PROGRAMS = {(p["target"], p["strategy"]): p for p in GROUP["programs"]}
# What a TPU compiler refused for lack of memory (the out-of-memory page shows it).
REFUSED = {k: p for k, p in PROGRAMS.items() if "refused" in p}
COMPILED = {k: p for k, p in PROGRAMS.items() if "refused" not in p}
EVERY_TARGET = [t for f in tg.FAMILIES.values() for t in f.advanced]
TPU_TARGETS = list(tg.FAMILIES["tpu"].advanced)
GPU_TARGETS = list(tg.FAMILIES["gpu"].advanced)
# The targets each claim below is checked on: every one, GPUs included, unless a test
# says otherwise (and the page says where the GPU program departs).
ADVANCED_TARGETS = EVERY_TARGET


def test_every_program_is_compiled_for_every_target():
    assert GROUP["targets"] == EVERY_TARGET
    expected = {(t, n) for t in EVERY_TARGET for n in advanced.PROGRAMS}
    assert set(PROGRAMS) == expected
    assert len(GROUP["programs"]) == len(expected)
    assert not {k: p["error"] for k, p in PROGRAMS.items() if "error" in p}


def test_only_programs_that_may_not_fit_are_refused_and_only_by_the_tpu_compiler():
    assert REFUSED  # the out-of-memory page shows libtpu refusing
    for (target, name), p in REFUSED.items():
        if name in advanced.UNIMPLEMENTED_ON:  # below
            continue
        assert name in advanced.MAY_NOT_FIT and target in TPU_TARGETS
        assert set(p) == {"target", "strategy", "refused"}
        assert (
            "RESOURCE_EXHAUSTED" in p["refused"] and "CompileTimeHbmOom" in p["refused"]
        )
    # a CPU or GPU compile is never refused for memory: their compilers build what does
    # not fit
    assert all(
        k in COMPILED
        for k in PROGRAMS
        if k[0] not in TPU_TARGETS and k[1] not in advanced.UNIMPLEMENTED_ON
    )


def test_a_program_a_backend_has_no_code_for_is_refused_there_and_compiled_elsewhere():
    """The expert-parallel page's ragged dispatch: the CPU backend refuses the op with
    UNIMPLEMENTED, recorded as the result; every TPU and GPU target compiles it."""
    assert {"MoE ragged dispatch": frozenset({"cpu"})} == advanced.UNIMPLEMENTED_ON
    for name, refusing in advanced.UNIMPLEMENTED_ON.items():
        for target in EVERY_TARGET:
            p = PROGRAMS[target, name]
            if target in refusing:
                assert set(p) == {"target", "strategy", "refused"}
                assert p["refused"].startswith(
                    "JaxRuntimeError: UNIMPLEMENTED: HLO opcode `ragged-all-to-all` is not "
                    "supported by XLA:CPU"
                )
            else:
                assert "summary" in p, target
    # what the driver records as a refusal, and what stays an error
    message = "JaxRuntimeError: UNIMPLEMENTED: HLO opcode `ragged-all-to-all`"
    assert driver.unimplemented("MoE ragged dispatch", "cpu", message)
    assert not driver.unimplemented("MoE ragged dispatch", "h100:1x8", message)
    assert not driver.unimplemented("MoE layer", "cpu", message)
    assert not driver.unimplemented("MoE ragged dispatch", "cpu", "ValueError: shapes")


def test_the_ragged_dispatch_claims_hold_on_every_target():
    """expert-parallel.md: one ragged-all-to-all beside the counts' exchange (an
    all-gather on the H100s, an all-reduce on the TPUs), at most the device's own tokens
    sent, as many rows as the capacity layer's buffer at a factor of 1, and a receiving
    buffer eight times the input on 8 devices."""
    text = (ROOT / "docs" / "advanced" / "expert-parallel.md").read_text()
    assert "<!-- tpu-ragged -->" in text
    filled = pages.ragged_table()
    assert all(f"| {t} |" in filled for t in EVERY_TARGET)
    assert (
        "| cpu | refused: UNIMPLEMENTED: HLO opcode ragged-all-to-all is not" in filled
    )
    rows, d = advanced.MOE_TOKENS_PER_DEVICE, advanced.D_MODEL
    for target in EVERY_TARGET:
        p = PROGRAMS[target, "MoE ragged dispatch"]
        if "refused" in p:
            continue
        counts = {"gpu": "all-gather", "tpu": "all-reduce"}[tg.family(target)]
        assert kinds(p) == {counts: 1, "ragged-all-to-all": 1}
        small = next(c for c in p["collectives"] if c["kind"] == counts)
        assert (
            small["result_bytes"] < 1024 and small["dtype"] == "s32"
        )  # "a few hundred"
        (ragged,) = (c for c in p["collectives"] if c["kind"] == "ragged-all-to-all")
        assert ragged["runs"] == 1 and ragged["group_size"] == 8
        assert ragged["full_bytes"] == rows * d * 4  # its own tokens, float32
        assert ragged["result_bytes"] == 8 * ragged["full_bytes"]
        # as many rows as the capacity layer's dispatch buffer at a factor of 1
        layer = PROGRAMS[target, "MoE layer"]
        buffer = next(c for c in layer["collectives"] if c["kind"] == "all-to-all")
        (shape,) = buffer["shapes"]
        assert (
            math.prod(map(int, shape.split("[")[1].rstrip("]").split(","))) == rows * d
        )
    said = page("expert-parallel.md")
    assert "an `all-gather` on the H100s; on the TPUs an `all-reduce`" in said
    assert "eight times the input on 8 devices" in said
    assert "checked once" not in said


def test_a_refusal_is_recorded_only_for_a_program_that_may_not_fit():
    name = next(iter(advanced.MAY_NOT_FIT))
    assert driver.refused_for_memory(name, "JaxRuntimeError: RESOURCE_EXHAUSTED: E1000")
    assert not driver.refused_for_memory(name, "ValueError: no such layout")
    assert not driver.refused_for_memory(
        "transformer step, remat", "JaxRuntimeError: RESOURCE_EXHAUSTED: E1000"
    )


@pytest.mark.parametrize("key", sorted(COMPILED), ids=" / ".join)
def test_each_program_agrees_with_itself(key):
    p = PROGRAMS[key]
    assert math.prod(p["mesh"].values()) == RESULTS["targets"][key[0]]["devices"]
    assert p["summary"] == hlo.summarize(p["collectives"])
    asynchronous = [c for c in p["collectives"] if c["form"] == "async"]
    assert [f["start"] for f in p["in_flight"]] == [c["name"] for c in asynchronous]
    assert all(f["matmuls"] >= 0 for f in p["in_flight"])


# Daily: the stored CPU rows change only with the pinned versions, checked on every push.
@pytest.mark.daily
@pytest.mark.parametrize("name", list(advanced.PROGRAMS))
def test_cpu_rows_are_what_this_environment_compiles(devices, name):
    stored = PROGRAMS["cpu", name]
    if "refused" in stored:  # the CPU backend has no code for it: still refused
        with pytest.raises(jax.errors.JaxRuntimeError) as raised:
            driver.describe("cpu", name, devices)
        said = f"{type(raised.value).__name__}: {raised.value}"
        assert said.split(". ")[0] == stored["refused"].split(". ")[0]
        return
    now = driver.describe("cpu", name, devices)
    for field in ("source", "mesh", "collectives", "summary", "memory", "in_flight"):
        assert now[field] == stored[field], field


def test_every_program_names_a_function_of_the_pages():
    import importlib

    for name in advanced.PROGRAMS:
        # a compiled row names it (the CPU refuses some: advanced.UNIMPLEMENTED_ON)
        row = next(p for (_, n), p in COMPILED.items() if n == name)
        module, _, function = row["source"].rpartition(".")
        assert hasattr(importlib.import_module(module), function), name


def test_every_module_the_programs_compile_is_an_input_of_the_results():
    """An edit to any page module that advanced.py compiles makes results.json stale (a
    test names it), rather than silently wrong: each is listed in driver.INPUTS (the
    advanced pages' modules, the pipeline-training page's and the FSDP page's)."""
    import subprocess
    import sys

    listed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, docs_build.compiled.advanced\n"
            "for m in list(sys.modules.values()):\n"
            "    f = getattr(m, '__file__', None) or ''\n"
            "    if m.__name__.startswith(('snippets.advanced.', "
            "'snippets.training.pipeline_training.', 'snippets.training.fsdp.')) and "
            "not f.endswith('__init__.py'): print(f)",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    imported = {Path(f).resolve().relative_to(ROOT).as_posix() for f in listed}
    assert imported and imported <= set(driver.INPUTS)


def test_an_unknown_program_stops_the_build_with_what_to_do():
    with pytest.raises(pages.CompiledResultsError, match=r"advanced\.py"):
        pages.fill("<!-- tpu-programs: no such program -->")


# ---------------------------------------------------------------- the manual control page


def page(name: str) -> str:
    return " ".join((ROOT / "docs" / "advanced" / name).read_text().split())


def test_the_manual_control_page_shows_both_matmuls_on_every_target():
    text = (ROOT / "docs" / "advanced" / "manual-control.md").read_text()
    assert "<!-- tpu-programs: gather matmul | ring matmul -->" in text
    assert "operands of 4096 \u00d7 4096 in bfloat16" in page("manual-control.md")
    assert advanced.MATMUL_SIZE == 4096


def test_the_manual_control_pages_claims_about_the_tpu_programs_hold():
    said = page("manual-control.md")
    for target in TPU_TARGETS:
        gather, ring = (
            PROGRAMS[target, "gather matmul"],
            PROGRAMS[target, "ring matmul"],
        )
        cpu_gather = PROGRAMS["cpu", "gather matmul"]
        # "both functions move bfloat16 ... the CPU program converts the operands to
        # float32 first and sends twice the bytes"
        assert {c["dtype"] for c in gather["collectives"] + ring["collectives"]} == {
            "bf16"
        }
        assert {c["dtype"] for c in cpu_gather["collectives"]} == {"f32"}
        assert pages.wire_mib(cpu_gather) == 2 * pages.wire_mib(gather)
        # "every permute of the ring is asynchronous"
        permutes = ring["collectives"]
        assert {c["kind"] for c in permutes} == {"collective-permute"}
        assert {c["form"] for c in permutes} == {"async"}
        # "it ran most of the permutes back to back, first, and scheduled multiplications
        # inside only the last few"
        counts = [f["matmuls"] for f in ring["in_flight"]]
        busy = [i for i, c in enumerate(counts) if c]
        assert busy and len(busy) < len(counts) / 2
        assert busy == list(range(busy[0], len(counts)))
        # "Both versions send the same bytes."
        assert pages.wire_mib(gather) == pages.wire_mib(ring)
    assert "Both versions send the same bytes." in said
    assert "scheduled multiplications inside only the last few" in said


def dtypes(p: dict, kind: str | None = None) -> set[str]:
    return {c["dtype"] for c in p["collectives"] if kind in (None, c["kind"])}


def kinds(p: dict) -> dict[str, int]:
    return {k: s["count"] for k, s in p["summary"].items()}


# ---------------------------------------------------------------- the sequence-parallel page


def test_the_sequence_parallel_page_shows_its_programs():
    text = (ROOT / "docs" / "advanced" / "sequence-parallel.md").read_text()
    assert "<!-- tpu-programs: ring attention -->" in text
    assert (
        "<!-- tpu-programs: tensor-parallel block | sequence-parallel block -->" in text
    )
    said = page("sequence-parallel.md")
    assert f"one head of {advanced.SEQUENCE} positions in bfloat16" in said
    assert advanced.HEAD == 128
    assert (
        f"{advanced.TOKENS} tokens of {advanced.D_MODEL} features and a hidden size of "
        f"{advanced.HIDDEN}, in float32" in said
    )


def test_the_ring_attention_claims_hold():
    cpu = PROGRAMS["cpu", "ring attention"]
    assert dtypes(cpu) == {"f32"}
    for target in TPU_TARGETS:
        ring = PROGRAMS[target, "ring attention"]
        # "every permute is asynchronous, and the bfloat16 blocks travel as they are;
        # the CPU program converts them to float32 first and sends twice the bytes"
        assert {c["form"] for c in ring["collectives"]} == {"async"}
        assert dtypes(ring) == {"bf16"}
        assert pages.wire_mib(cpu) == 2 * pages.wire_mib(ring)
    # "On v5e the compiler scheduled multiplications inside every one of the permutes"
    assert all(f["matmuls"] for f in PROGRAMS["v5e:2x4", "ring attention"]["in_flight"])
    # "On v5p it ran the first permutes with nothing beside them and overlapped only the
    # later ones"
    counts = [
        f["matmuls"] for f in PROGRAMS["v5p:2x2x2", "ring attention"]["in_flight"]
    ]
    busy = [i for i, c in enumerate(counts) if c]
    assert counts[0] == 0 and busy == list(range(busy[0], len(counts)))


def test_the_sequence_parallel_blocks_claims_hold():
    for target in ADVANCED_TARGETS:
        # "The tensor-parallel block keeps its one all-reduce everywhere."
        assert kinds(PROGRAMS[target, "tensor-parallel block"]) == {"all-reduce": 1}
    # The CPU program is as written, and the ring model's bytes are equal.
    cpu = PROGRAMS["cpu", "sequence-parallel block"]
    assert kinds(cpu) == {"all-gather": 1, "reduce-scatter": 1}
    tp_cpu = PROGRAMS["cpu", "tensor-parallel block"]
    assert pages.wire_mib(cpu) == pages.wire_mib(tp_cpu)
    # "On v5e the compiler gathers the normalised tokens in bfloat16 ... so sequence
    # parallelism sends less than tensor parallelism."
    v5e = PROGRAMS["v5e:2x4", "sequence-parallel block"]
    assert kinds(v5e) == {"all-gather": 1, "reduce-scatter": 1}
    assert dtypes(v5e, "all-gather") == {"bf16"}
    tp_v5e = PROGRAMS["v5e:2x4", "tensor-parallel block"]
    assert pages.wire_mib(v5e) < pages.wire_mib(tp_v5e)
    # "On v5p it replaced the reduce-scatter by an all-reduce ... and sequence parallelism
    # sends more."
    v5p = PROGRAMS["v5p:2x2x2", "sequence-parallel block"]
    assert kinds(v5p) == {"all-reduce": 1, "all-gather": 1}
    tp_v5p = PROGRAMS["v5p:2x2x2", "tensor-parallel block"]
    assert pages.wire_mib(v5p) > pages.wire_mib(tp_v5p)


# ---------------------------------------------------------------- the expert-parallel page


def test_the_expert_parallel_pages_claims_hold():
    text = (ROOT / "docs" / "advanced" / "expert-parallel.md").read_text()
    assert "<!-- tpu-programs: MoE layer -->" in text
    said = page("expert-parallel.md")
    assert (
        f"{advanced.MOE_TOKENS_PER_DEVICE} tokens per device of {advanced.D_MODEL} "
        f"features, a hidden size of {advanced.HIDDEN}, one expert per device, capacity "
        f"factor {advanced.MOE_FACTOR}, in float32" in said
    )
    cpu = PROGRAMS["cpu", "MoE layer"]
    assert dtypes(cpu) == {"f32"}
    for target in ADVANCED_TARGETS:
        # "two all-to-alls, and no other collective, on every target"
        assert kinds(PROGRAMS[target, "MoE layer"]) == {"all-to-all": 2}
    for target in TPU_TARGETS:
        # "The TPU programs send the buffers in bfloat16 ... That halves the bytes"
        tpu = PROGRAMS[target, "MoE layer"]
        assert dtypes(tpu) == {"bf16"}
        assert pages.wire_mib(cpu) == 2 * pages.wire_mib(tpu)


# ---------------------------------------------------------------- the inference page


def test_the_inference_pages_claims_hold():
    text = (ROOT / "docs" / "advanced" / "inference.md").read_text()
    assert (
        "<!-- tpu-programs: decode, cache by batch | decode, cache by heads -->" in text
    )
    assert f"a batch of {advanced.DECODE_BATCH}, compiled" in page("inference.md")
    for target in ADVANCED_TARGETS:
        # "no collective in the step split by batch, one all-reduce of float32
        # activations per step split by heads ... a few kilobytes per step"
        assert kinds(PROGRAMS[target, "decode, cache by batch"]) == {}
        heads = PROGRAMS[target, "decode, cache by heads"]
        assert kinds(heads) == {"all-reduce": 1} and dtypes(heads) == {"f32"}
        assert 1024 <= pages.wire_mib(heads) * pages.MIB < 16 * 1024


def test_the_sequence_split_cache_keeps_its_two_all_reduces_on_every_target():
    text = (ROOT / "docs" / "advanced" / "inference-caches.md").read_text()
    assert "<!-- tpu-programs: decode, MQA cache by sequence -->" in text
    said = page("inference-caches.md")
    assert (
        "On every target the step keeps its two all-reduces of float32 partial "
        "results, a few kilobytes per step" in said
    )
    assert "on every target it was compiled for" in said
    assert advanced.DECODE_KV_HEADS == 1  # multi-query, as the page compiles it
    for target in ADVANCED_TARGETS:
        p = PROGRAMS[target, "decode, MQA cache by sequence"]
        assert kinds(p) == {"all-reduce": 2} and dtypes(p) == {"f32"}, target
        assert 1024 <= pages.wire_mib(p) * pages.MIB < 16 * 1024
        # the largest score, one number per query head and sequence, on every target
        assert p["collectives"][0]["shapes"] == ["f32[8,1,8,1,1]"]


# ---------------------------------------------------------------- the transformer page

REMAT, NO_REMAT = "transformer step, remat", "transformer step, no remat"


def test_the_transformer_page_shows_its_memory_on_every_target():
    text = (ROOT / "docs" / "advanced" / "transformer.md").read_text()
    assert f"<!-- tpu-memory: {REMAT} | {NO_REMAT} -->" in text
    cfg, said = advanced.TRANSFORMER, page("transformer.md")
    assert (
        f"a vocabulary of {cfg.vocab:,}, width {cfg.d_model:,}, {cfg.layers} layers, an "
        f"MLP of {cfg.mlp:,} and a batch of {advanced.TRANSFORMER_BATCH} sequences of "
        f"{cfg.seq:,} tokens" in said
    )
    d, m = cfg.d_model, cfg.mlp
    params = 2 * cfg.vocab * d + cfg.layers * (4 * d * d + 2 * d * m + 2 * d) + d
    assert f"(about {round(params / 1e6)} million parameters)" in said


def test_the_transformer_pages_memory_claims_hold():
    said = page("transformer.md")
    for name in (REMAT, NO_REMAT):
        for target in ADVANCED_TARGETS:
            p = PROGRAMS[target, name]
            # "The formula holds on every backend. On TPU it is short by 1,016 bytes: the
            # state's two 4-byte step counters take 512 bytes each there."
            scalar = p["extra"]["scalar_bytes"]
            assert pages.state_gap(p) == 2 * (scalar - 4)
            assert (scalar == 4) == (tg.family(target) != "tpu")
            if tg.family(target) == "tpu":
                assert scalar == 512 and pages.state_gap(p) == 1016
            else:  # "to the byte on the CPU and the GPU"
                assert pages.state_gap(p) == 0
            # the arguments are the state and the device's tokens, as on the CPU table
            m = p["memory"]
            assert m["argument_bytes"] - p["extra"]["tokens_bytes"] >= m["alias_bytes"]
    assert "short by 1,016 bytes" in said and "take 512 bytes each there" in said
    for target in ADVANCED_TARGETS:
        on, off = (
            PROGRAMS[target, REMAT]["memory"],
            PROGRAMS[target, NO_REMAT]["memory"],
        )
        # "Remat cuts the temporaries more than threefold on every backend at this size"
        assert off["temp_bytes"] > 3 * on["temp_bytes"]
        if target == "cpu":
            # "The CPU backend's peak counts its arguments and not its temporaries"
            for m in (on, off):
                assert abs(m["peak_bytes"] - m["argument_bytes"]) < 1024
                assert m["peak_bytes"] < m["argument_bytes"] + m["temp_bytes"] / 2
        elif tg.family(target) == "tpu":
            # "... the TPU's peak about threefold with them"
            assert 2.8 < off["peak_bytes"] / on["peak_bytes"] < 3.5
        else:
            # "... and the GPU's more than twofold"
            assert 2 < off["peak_bytes"] / on["peak_bytes"] < 3
    assert "more than threefold on every backend" in said
    assert "the TPU's peak about threefold" in said
    assert "the GPU's more than twofold" in said


# ---------------------------------------------------------------- the shapes page

COPIED, PADDED = "dense layer, batch copied", "dense layer, batch padded and split"


def test_the_shapes_pages_flop_claims_hold_on_every_target():
    text = (ROOT / "docs" / "advanced" / "shapes-and-randomness.md").read_text()
    assert f"<!-- tpu-work: {COPIED} | {PADDED} -->" in text
    said = page("shapes-and-randomness.md")
    assert "count the same flops per device and hold no collective either" in said
    rows, k, n = advanced.UNEVEN_ROWS, advanced.UNEVEN_IN, advanced.UNEVEN_OUT
    assert (rows, k, n) == (10, 32, 64)  # the page's "(2 x 10 x 32 x 64)"
    for target in ADVANCED_TARGETS:
        copied, padded = PROGRAMS[target, COPIED], PROGRAMS[target, PADDED]
        assert kinds(copied) == kinds(padded) == {}
        if tg.family(target) == "gpu":
            # "XLA's GPU compiler reports no flops for a program compiled without the card"
            assert copied["cost"]["flops"] is padded["cost"]["flops"] is None
            assert "reports no flops for a program compiled without the card" in said
            continue
        assert copied["cost"]["flops"] == 2 * rows * k * n
        # "the padded batch costs each device a fifth of the flops of the copied one"
        per_device = advanced.UNEVEN_PADDED // 8
        assert padded["cost"]["flops"] == 2 * per_device * k * n
        assert copied["cost"]["flops"] == 5 * padded["cost"]["flops"]
        assert kinds(copied) == kinds(padded) == {}


# ---------------------------------------------------------------- the profiling page

SPLIT, WHOLE = "predict, weights split", "predict, weights whole"


def test_the_profiling_pages_claims_about_the_tpu_programs_hold():
    text = (ROOT / "docs" / "advanced" / "profiling.md").read_text()
    assert f"<!-- tpu-work: {SPLIT} | {WHOLE} -->" in text
    said = page("profiling.md")
    assert (
        f"{advanced.TOKENS:,} rows of {advanced.D_MODEL:,} features and a hidden layer "
        f"of {advanced.HIDDEN:,}" in said
    )
    cpu = PROGRAMS["cpu", SPLIT]
    assert kinds(cpu) == {"all-gather": 2} and dtypes(cpu) == {"f32"}
    for target in TPU_TARGETS:
        # "gather the same two weights, but in bfloat16 ... half the CPU program's bytes"
        tpu = PROGRAMS[target, SPLIT]
        assert kinds(tpu) == {"all-gather": 2} and dtypes(tpu) == {"bf16"}
        assert pages.wire_mib(cpu) == 2 * pages.wire_mib(tpu)
        gathered = sorted(c["shapes"][0].split("[")[1] for c in tpu["collectives"])
        assert gathered == sorted(
            c["shapes"][0].split("[")[1] for c in cpu["collectives"]
        )
    for target in ADVANCED_TARGETS:
        # "With the weights whole, no backend's program holds a collective."
        assert kinds(PROGRAMS[target, WHOLE]) == {}
    assert "in bfloat16 rather than float32, so they send half" in said


def test_the_profiling_page_says_the_ops_are_the_backends_and_the_type_a_default():
    """The ops of a step differ by backend, so they are not what carries over; the
    bfloat16 gathers come from JAX's default matmul precision, which the TPU programs
    were compiled with (nothing in the build sets another)."""
    said = page("profiling.md")
    cpu, tpu = PROGRAMS["cpu", SPLIT], PROGRAMS["v5e:2x4", SPLIT]
    assert dtypes(cpu) != dtypes(tpu)  # the same code, other ops
    assert "The ops themselves are the CPU backend's program" in said
    assert "which ops a step runs" not in said
    assert jax.config.jax_default_matmul_precision is None
    for source in (ROOT / "docs_build" / "tpu").glob("*.py"):
        assert "precision" not in source.read_text(), source
    assert "That is JAX's default matmul precision at work" in said


# ---------------------------------------------------------------- what the GPU programs do


def test_the_pages_claims_about_the_gpu_programs_hold():
    """Each advanced page's bold GPU sentence, against the one-node H100 programs."""
    cpu = {name: PROGRAMS["cpu", name] for name in advanced.PROGRAMS}
    for target in GPU_TARGETS:
        gpu = {name: PROGRAMS[target, name] for name in advanced.PROGRAMS}
        # manual control: "made all but the last synchronous, and scheduled no
        # multiplication while that last one was in flight ... bfloat16 as on TPU"
        ring = gpu["ring matmul"]
        forms = [c["form"] for c in ring["collectives"]]
        assert forms == ["sync"] * (len(forms) - 1) + ["async"]
        assert [f["matmuls"] for f in ring["in_flight"]] == [0]
        assert dtypes(ring) == {"bf16"}
        assert pages.wire_mib(ring) == pages.wire_mib(gpu["gather matmul"])
        # sequence parallel: "most of the permutes are synchronous: only the last two run
        # asynchronously, with multiplications beside them ... bfloat16 there too"
        attention = gpu["ring attention"]
        forms = [c["form"] for c in attention["collectives"]]
        assert forms == ["sync"] * (len(forms) - 2) + ["async"] * 2
        assert all(f["matmuls"] > 0 for f in attention["in_flight"])
        assert dtypes(attention) == {"bf16"}
        # "both blocks keep the plans as written, in float32, and send the same bytes"
        tp, sp = gpu["tensor-parallel block"], gpu["sequence-parallel block"]
        assert kinds(tp) == {"all-reduce": 1}
        assert kinds(sp) == {"all-gather": 1, "reduce-scatter": 1}
        assert dtypes(tp) == dtypes(sp) == {"f32"}
        assert pages.wire_mib(tp) == pytest.approx(pages.wire_mib(sp))
        # expert parallel: "the GPU program sends float32, as the CPU's does, and the
        # same bytes"
        moe = gpu["MoE layer"]
        assert kinds(moe) == {"all-to-all": 2} and dtypes(moe) == {"f32"}
        assert pages.wire_mib(moe) == pages.wire_mib(cpu["MoE layer"])
        # inference: "keep both plans"
        assert kinds(gpu["decode, cache by batch"]) == {}
        heads = gpu["decode, cache by heads"]
        assert kinds(heads) == {"all-reduce": 1} and dtypes(heads) == {"f32"}
        # profiling: "gathers them in float32, as the CPU's does, and sends the same
        # bytes; it reports no flops"
        split = gpu[SPLIT]
        assert kinds(split) == {"all-gather": 2} and dtypes(split) == {"f32"}
        assert pages.wire_mib(split) == pages.wire_mib(cpu[SPLIT])
        assert split["cost"]["flops"] is None
    for name, phrase in (
        ("manual-control.md", "The GPU program overlaps nothing."),
        ("sequence-parallel.md", "On the GPU most of the permutes are synchronous"),
        ("sequence-parallel.md", "On the GPU both blocks keep the plans as written"),
        ("expert-parallel.md", "The GPU program sends float32"),
        ("inference.md", "The TPU and GPU compilers keep both plans"),
        ("profiling.md", "The GPU program gathers them in float32"),
    ):
        assert phrase in page(name), (name, phrase)


# ---------------------------------------------------------------- the FSDP page's ZeRO steps


def test_zero_rules_place_the_state_as_the_fsdp_pages_shard_moments(devices):
    """advanced.zero_rules gives the shapes what the page's shard_moments gives real
    arrays: the parameters and step counts whole, mu and nu by the FSDP rule."""
    import optax
    from flax import nnx
    from jax import P
    from jax.sharding import NamedSharding

    from docs_build.compiled import steps
    from snippets.training.fsdp.placement import data_mesh
    from snippets.training.fsdp.zero import shard_moments

    mesh = data_mesh()
    model, optimizer, x, _ = steps.abstract_training_state(
        mesh, advanced.zero_rules(mesh), P("data")
    )
    real = jax.device_put(
        steps.MLP(steps.D, steps.HIDDEN, steps.D, rngs=nnx.Rngs(0)),
        NamedSharding(mesh, P()),
    )
    real_optimizer = nnx.Optimizer(real, optax.adam(1e-2), wrt=nnx.Param)
    shard_moments(real_optimizer, steps.fsdp_rules(mesh), mesh)
    shapes = jax.tree.leaves(nnx.state((model, optimizer)))
    arrays = jax.tree.leaves(nnx.state((real, real_optimizer)))
    assert [s.sharding.spec for s in shapes] == [a.sharding.spec for a in arrays]
    assert {s.sharding.spec for s in shapes} == {P(), P("data"), P(None, "data")}
    assert x.sharding.spec == P("data")


def training_page(name: str) -> str:
    return " ".join((ROOT / "docs" / "training" / name).read_text().split())


ZERO1, ZERO2 = "ZeRO-1 step", "ZeRO-2 step"
FSDP_PAGE_STEP = "FSDP, explicit gather"


def collectives_of(p: dict) -> list:
    return sorted(
        (c["kind"], c["dtype"], tuple(c["shapes"]), c["wire_bytes"])
        for c in p["collectives"]
    )


def test_the_fsdp_page_shows_its_zero_steps_on_every_target():
    text = (ROOT / "docs" / "training" / "fsdp.md").read_text()
    assert "<!-- tpu-zero -->" in text
    filled = pages.zero_table()
    for target in ADVANCED_TARGETS:
        for name in pages.ZERO_STEPS:
            label = pages.ZERO_LABELS.get(name, name.removesuffix(" step"))
            assert f"| {target} | {label} |" in filled


def test_the_zero_steps_hold_whole_parameters_and_an_eighth_of_each_moment():
    """ "on every target a device holds the whole parameters and an eighth of each moment":
    from the placed shapes, and in the compiled programs' arguments against data
    parallelism's (everything whole) and FSDP's (everything split)."""
    params = RESULTS["model"]
    n_params = params["d"] * params["hidden"] * 2 + params["d"] + params["hidden"]
    whole = 4 * n_params  # bytes of P in float32
    for target in ADVANCED_TARGETS:
        dp = pages.any_program(target, "data parallel")["memory"]["argument_bytes"]
        fsdp = pages.any_program(target, FSDP_PAGE_STEP)["memory"]["argument_bytes"]
        for name in (ZERO1, ZERO2):
            p = PROGRAMS[target, name]
            assert p["extra"] == {"param_bytes": whole, "moment_bytes": 2 * whole // 8}
            args = p["memory"]["argument_bytes"]
            # the moments: 2P whole in data parallelism, 2P / 8 here
            assert dp - args == 2 * whole - 2 * whole // 8
            # the parameters: P / 8 in FSDP, P here
            assert args - fsdp == whole - whole // 8
    said = training_page("fsdp.md")
    assert (
        "on every target a device holds the whole parameters and an eighth of each "
        "moment" in said
    )


# ---------------------------------------------------------------- Ulysses against the ring


def test_the_sequence_parallel_page_shows_ulysses_against_the_ring():
    text = (ROOT / "docs" / "advanced" / "sequence-parallel.md").read_text()
    assert "<!-- tpu-ulysses -->" in text
    said = page("sequence-parallel.md")
    assert advanced.ULYSSES_HEADS == 8 and advanced.SEQUENCE == 32768
    assert (
        "32768 positions of 128 features in bfloat16, with eight heads, the fewest it "
        "takes on eight devices" in said
    )
    filled = pages.ulysses_table()
    assert all(f"| {t} |" in filled for t in ADVANCED_TARGETS)


def test_ulysses_sends_a_quarter_of_the_rings_bytes_per_head_on_every_target():
    for target in ADVANCED_TARGETS:
        ring_p = PROGRAMS[target, "ring attention"]
        uly = PROGRAMS[target, "Ulysses attention"]
        # "four all-to-alls for Ulysses and permutes only for the ring, on every target"
        assert kinds(uly) == {"all-to-all": 4}
        assert set(kinds(ring_p)) == {"collective-permute"}
        # "Per head, Ulysses sends a quarter of the ring's bytes on every target"
        per_head = pages.wire_mib(uly) / uly["extra"]["heads"]
        assert pages.wire_mib(ring_p) == 4 * per_head
    said = page("sequence-parallel.md")
    assert (
        "Per head, Ulysses sends a quarter of the ring's bytes on every target" in said
    )


def test_ulysses_runs_its_all_to_alls_as_each_compiler_chose():
    for target in TPU_TARGETS:
        # "on both TPU slices the ring's permutes are asynchronous and Ulysses's
        # all-to-alls are not"
        uly = PROGRAMS[target, "Ulysses attention"]
        assert {c["form"] for c in uly["collectives"]} == {"sync"}
        ring_p = PROGRAMS[target, "ring attention"]
        assert {c["form"] for c in ring_p["collectives"]} == {"async"}
    for target in GPU_TARGETS:
        uly = PROGRAMS[target, "Ulysses attention"]
        # "on the GPU the three all-to-alls of q, k and v are asynchronous and the
        # output's is not, while most of the ring's permutes are synchronous there"
        forms = [c["form"] for c in uly["collectives"]]
        assert forms == ["async"] * 3 + ["sync"]
        ring_forms = [
            c["form"] for c in PROGRAMS[target, "ring attention"]["collectives"]
        ]
        assert ring_forms.count("sync") > len(ring_forms) / 2
    said = page("sequence-parallel.md")
    assert (
        "on both TPU slices the ring's permutes are asynchronous and Ulysses's "
        "all-to-alls are not" in said
    )
    assert (
        "on the GPU the three all-to-alls of q, k and v are asynchronous and the "
        "output's is not, while most of the ring's permutes are synchronous there"
        in said
    )


# ---------------------------------------------------------------- the load-balancing loss


def shapes(p: dict) -> list[str]:
    return sorted(s for c in p["collectives"] for s in c["shapes"])


def test_the_balance_loss_and_its_gradient_claims_hold_on_every_target():
    text = (ROOT / "docs" / "advanced" / "expert-parallel.md").read_text()
    assert "<!-- tpu-balance -->" in text
    filled = pages.balance_table()
    assert all(f"| {t} |" in filled for t in ADVANCED_TARGETS)
    experts, d = 8, advanced.D_MODEL
    for target in ADVANCED_TARGETS:
        loss = PROGRAMS[target, "MoE balance loss"]
        grad = PROGRAMS[target, "MoE balance loss gradient"]
        # "The loss keeps its two all-reduces of eight numbers on every target, 56 bytes
        # each by the ring model"
        assert kinds(loss) == {"all-reduce": 2}
        assert shapes(loss) == [f"f32[{experts}]", f"s32[{experts}]"]
        assert {c["wire_bytes"] for c in loss["collectives"]} == {56}
        # "against the megabytes of the layer's all-to-alls"
        layer = PROGRAMS[target, "MoE layer"]
        assert pages.wire_mib(layer) >= 3 and pages.wire_mib(loss) * pages.MIB == 112
        # "The gradient holds two all-reduces as well, but another pair. The all-reduce of
        # the probabilities' sums is gone ... a sum of the router's gradient, 1024 x 8 float32
        # numbers, 56 KiB per device"
        assert kinds(grad) == {"all-reduce": 2}
        assert shapes(grad) == [f"f32[{d},{experts}]", f"s32[{experts}]"]
        router = next(c for c in grad["collectives"] if c["dtype"] == "f32")
        assert router["wire_bytes"] == 56 * 2**10
    said = page("expert-parallel.md")
    assert "The loss keeps its two all-reduces of eight numbers on every target" in said
    assert "1024 \u00d7 8 float32 numbers, 56 KiB per device" in said


def test_zero_2_compiles_to_zero_1s_collectives_and_the_plans_differ_by_backend():
    said = training_page("fsdp.md")
    for target in ADVANCED_TARGETS:
        zero1, zero2 = PROGRAMS[target, ZERO1], PROGRAMS[target, ZERO2]
        # "on every target its program holds the same collectives as ZeRO-1's"
        assert collectives_of(zero1) == collectives_of(zero2)
        dp = pages.wire_mib(pages.any_program(target, "data parallel"))
        sent = pages.wire_mib(zero1)
        if target in ("v5e:2x4", *GPU_TARGETS):
            # "On v5e and on the H100 node the compiler reduce-scatters the kernels'
            # gradients in both steps ... they send about data parallelism's 56.0 MiB"
            scattered = [
                c for c in zero1["collectives"] if c["kind"] == "reduce-scatter"
            ]
            assert scattered and "all-reduce" in kinds(zero1)
            assert abs(sent / dp - 1) < 1e-3
        else:
            # "On v5p, as on the CPU, it keeps the full all-reduce and gathers after it,
            # 1.5 times data parallelism's bytes."
            assert target in ("cpu", "v5p:2x2x2")
            assert kinds(zero1) == {"all-reduce": 1, "all-gather": 4}
            assert abs(sent / dp - 1.5) < 1e-3
    assert pages.number("v5e:2x4", "data parallel") == pages.number(
        "h100:1x8", "data parallel"
    )
    assert "The ZeRO-2 constraint changed no compiler's plan" in said
    assert "On v5e and on the H100 node the compiler reduce-scatters" in said
    assert "On v5p, as on the CPU, it keeps the full all-reduce" in said
    assert "1.5 times data parallelism's bytes" in said


# ---------------------------------------------------------------- experts beside data and FSDP

EXPERT_STEPS = ("MoE step, data x expert", "MoE step, FSDP x expert")
CLAIMS = ("groups", "tpu_dtypes", "cpu_gpu_f32", "h100_split", "arguments")


def expert_step_claims(programs: dict) -> dict[str, bool]:
    """Each sentence the expert-parallel FSDP page says of its (data, expert) steps, against
    the compiled records: True where the records bear it out."""
    claims = dict.fromkeys(CLAIMS, True)
    router_and_loss = (advanced.D_MODEL * 8 + 1) * 4  # f32[1024,8] and f32[]
    for target in ADVANCED_TARGETS:
        dp, fsdp = (programs[target, name] for name in EXPERT_STEPS)
        for p in (dp, fsdp):
            for c in p["collectives"]:
                over = c["replica_groups"].rsplit(" ", 1)[-1]
                claims["groups"] &= {
                    "all-to-all": c["group_size"] == 4 and over == "{'expert'}",
                    "all-reduce": (c["group_size"], over) in ((2, "{'data'}"),)
                    or (c["group_size"] == 8 and c["result_bytes"] == router_and_loss),
                }.get(c["kind"], c["group_size"] == 2 and over == "{'data'}")
            eights = [c for c in p["collectives"] if c["group_size"] == 8]
            claims["groups"] &= len(eights) == 1
            kinds_dtypes = {(c["kind"], c["dtype"]) for c in p["collectives"]}
            if target in TPU_TARGETS:
                moved = {
                    d for k, d in kinds_dtypes if k in ("all-to-all", "all-gather")
                }
                summed = {
                    d for k, d in kinds_dtypes if k in ("all-reduce", "reduce-scatter")
                }
                claims["tpu_dtypes"] &= moved == {"bf16"} and summed == {"f32"}
            else:
                claims["cpu_gpu_f32"] &= {d for _, d in kinds_dtypes} == {"f32"}
        if target in TPU_TARGETS:
            claims["tpu_dtypes"] &= pages.wire_mib(fsdp) < pages.wire_mib(dp)
        else:
            claims["cpu_gpu_f32"] &= pages.wire_mib(fsdp) == pages.wire_mib(dp)
        data_sums = [
            c
            for c in dp["collectives"]
            if c["kind"] == "all-reduce" and c["group_size"] == 2
        ]
        claims["h100_split"] &= len(data_sums) == (2 if target in GPU_TARGETS else 1)
        claims["arguments"] &= [
            round(p["memory"]["argument_bytes"] / pages.MIB) for p in (dp, fsdp)
        ] == [72, 40]
    return claims


def test_the_expert_steps_on_a_data_by_expert_mesh_hold_what_the_page_says():
    text = (ROOT / "docs" / "advanced" / "expert-parallel-fsdp.md").read_text()
    assert "<!-- tpu-expert-groups -->" in text
    filled = pages.expert_groups_table()
    assert all(f"| {t} |" in filled for t in ADVANCED_TARGETS)
    assert "in groups of 4" in filled and "in groups of 2" in filled
    assert "\u00d7" not in filled  # the sign is a run count in the other tables
    for target in ADVANCED_TARGETS:
        for name in EXPERT_STEPS:
            assert PROGRAMS[target, name]["mesh"] == {"data": 2, "expert": 4}
    # "1024 tokens per device of 1024 features, hidden 4096, eight experts, two per
    # "expert" device": C = 1024 / 8 slots; each piece of the all-to-all two experts' slots
    assert (advanced.MOE_TOKENS_PER_DEVICE, advanced.D_MODEL, advanced.HIDDEN) == (
        1024,
        1024,
        4096,
    )
    cpu = PROGRAMS["cpu", EXPERT_STEPS[0]]["collectives"]
    assert cpu[0]["kind"] == "all-to-all"
    assert cpu[0]["shapes"] == ["f32[2,128,1024]"] * 4
    assert expert_step_claims(PROGRAMS) == dict.fromkeys(CLAIMS, True)
    said = page("expert-parallel-fsdp.md")
    for sentence in (
        "(1024 tokens per device of 1024 features, hidden 4096, eight experts, two per "
        '`"expert"` device)',
        "on every target the all-to-alls stay within a row of four, every sum, gather "
        'and reduce-scatter of the experts\' weights runs between the two `"data"` '
        "copies, and only the router's gradient and the loss span all eight",
        "On both TPUs the all-to-alls and the FSDP gathers travel in bfloat16",
        "while the gradient sums stay float32, so FSDP sends fewer bytes there than "
        "data x expert",
        "On the CPU and the H100s every collective carries float32, and the two steps "
        "send the same bytes",
        "The H100 program sums the two weights' gradients in two all-reduces, where the "
        "CPU's and the TPUs' combine them into one",
        "On every target FSDP cuts the arguments per device, tokens included, from 72 "
        "to 40 MiB",
    ):
        assert sentence in said, sentence


@pytest.mark.parametrize(
    ("target", "name", "flip", "claim"),
    [
        # an all-to-all that spanned the whole mesh
        ("cpu", EXPERT_STEPS[0], lambda c: c["kind"] == "all-to-all", "groups"),
        # a TPU gather in float32
        (
            "v5p:2x2x2",
            EXPERT_STEPS[1],
            lambda c: c["kind"] == "all-gather",
            "tpu_dtypes",
        ),
        # an H100 all-to-all in bfloat16
        (
            "h100:1x8",
            EXPERT_STEPS[0],
            lambda c: c["kind"] == "all-to-all",
            "cpu_gpu_f32",
        ),
    ],
)
def test_the_expert_step_claims_fail_when_the_records_flip(target, name, flip, claim):
    import copy

    programs = copy.deepcopy(PROGRAMS)
    for c in programs[target, name]["collectives"]:
        if flip(c):
            if claim == "groups":
                c["group_size"], c["replica_groups"] = 8, "{'data','expert'}"
            else:
                c["dtype"] = {"bf16": "f32", "f32": "bf16"}[c["dtype"]]
    assert not expert_step_claims(programs)[claim]


def test_the_h100_and_argument_claims_fail_when_the_records_flip():
    import copy

    programs = copy.deepcopy(PROGRAMS)
    dp = programs["h100:1x8", EXPERT_STEPS[0]]
    dp["collectives"] = [
        c for c in dp["collectives"] if c["shapes"] != ["f32[2,4096,1024]"]
    ]  # as if the H100 combined its two sums into one
    fsdp = programs["v5e:2x4", EXPERT_STEPS[1]]
    fsdp["memory"] = {**fsdp["memory"], "argument_bytes": 72 * pages.MIB}
    claims = expert_step_claims(programs)
    assert not claims["h100_split"] and not claims["arguments"]
