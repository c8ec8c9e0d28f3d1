"""The compiled evidence: each family's committed results file (docs_build/compiled/results/)
is complete, made with the pins from the code as it is, agrees with itself, and its CPU rows
are what this environment compiles today.

The tests environment has neither libtpu nor the CUDA plugin: the TPU and GPU rows are
checked for consistency, and the CPU rows (made by the same driver) are recompiled here.
"""

import json
import math

import jax
import optax
import pytest
from flax import nnx

from docs_build import hlo
from docs_build.compiled import driver, steps
from docs_build.compiled import targets as tg
from docs_build.compiled.results import results

FILES = {
    family: json.loads(driver.results_path(family).read_text())
    for family in tg.FAMILIES
}
RESULTS = results()
PROGRAMS = {(p["target"], p["strategy"]): p for p in RESULTS["programs"]}
HYBRID = {(p["target"], p["strategy"]): p for p in RESULTS["hybrid"]["programs"]}
# A GPU program spans every node; libtpu compiles one slice's program (its groups cover one
# slice's chips, and what crosses slices is read from host transfers): only the GPU ones
# are checked as programs over every device of their target.
OPTIONS = {(p["target"], p["strategy"]): p for p in RESULTS["options"]["programs"]}
WHOLE = (
    PROGRAMS | OPTIONS | {k: p for k, p in HYBRID.items() if tg.family(k[0]) == "gpu"}
)


def test_every_target_and_strategy_compiled():
    targets = [t for f in tg.FAMILIES.values() for t in f.targets]
    expected = {(t, s) for t in targets for s in steps.STRATEGIES}
    assert set(PROGRAMS) == expected
    assert len(RESULTS["programs"]) == len(expected)  # no duplicates
    errors = {k: p["error"] for k, p in PROGRAMS.items() if "error" in p}
    assert not errors
    multi = [t for f in tg.FAMILIES.values() for t in f.multi]
    assert set(HYBRID) == {(t, s) for t in multi for s in steps.HYBRID_STRATEGIES}
    assert not {k: p["error"] for k, p in HYBRID.items() if "error" in p}
    options = [t for f in tg.FAMILIES.values() for t in f.options]
    assert options == ["h100:1x8"]
    assert set(OPTIONS) == {(t, s) for t in options for s in steps.OPTION_PROGRAMS}
    assert not {k: p["error"] for k, p in OPTIONS.items() if "error" in p}


@pytest.mark.parametrize("family", list(tg.FAMILIES))
def test_made_with_the_pinned_packages(family):
    """Moving a pin without running the family's session fails here."""
    made = FILES[family]["versions"]
    for name, version in driver.pins(family).items():
        if name in made:
            assert made[name] == version, (
                f"{family}.json was made with {name} {made[name]}, the pin is {version}: "
                f"run `nox -s {'gpu' if family == 'gpu' else 'tpu'}` and commit the result"
            )
    assert set(driver.PACKAGES[family]) <= set(made)


@pytest.mark.parametrize("family", list(tg.FAMILIES))
def test_results_were_made_from_the_code_as_it_is(family):
    """An edit to a step, the page code it compiles, the driver, the targets, a GPU spec
    or the reader, without the family's session, fails here rather than leaving the
    pages' figures stale."""
    now = driver.inputs_digest(family)
    stale = sorted(p for p in now if FILES[family]["inputs"].get(p) != now[p])
    assert not stale, (
        f"docs_build/compiled/results/{family}.json is older than {stale}: run "
        f"`nox -s {'gpu' if family == 'gpu' else 'tpu'}` and commit the result"
    )


def test_targets_are_what_they_say():
    targets = RESULTS["targets"] | RESULTS["hybrid"]["targets"]
    assert targets["cpu"] == {
        "devices": 8,
        "device_kind": "cpu",
        "platform": "cpu",
        "family": "cpu",
    }
    kinds = {"v5e": "TPU v5 lite", "v5p": "TPU v5"}
    cards = {"h100": "NVIDIA H100 80GB HBM3", "a100": "NVIDIA A100-SXM4-80GB"}
    for name, target in targets.items():
        family = tg.family(name)
        assert target["family"] == family
        if family == "tpu":
            topology = tg.MULTI.fullmatch(name)
            slices = int(topology.group(1)) if topology else 1
            chips = math.prod(
                int(n)
                for n in (topology.group(3) if topology else name)
                .split(":")[1]
                .split("x")
            )
            assert target["devices"] == slices * chips and target["platform"] == "tpu"
            assert target["device_kind"] == kinds[tg.card(name)]
        if family == "gpu":
            count, per_node = tg.nodes(name)
            assert (target["nodes"], target["gpus_per_node"]) == (count, per_node)
            assert target["devices"] == count * per_node and target["platform"] == "gpu"
            assert target["device_kind"] == cards[tg.card(name)]
            assert target["memory_bytes"] == tg.spec_value(
                tg.card(name), "device_memory_size"
            )


@pytest.mark.parametrize("key", sorted(WHOLE), ids=" / ".join)
def test_each_program_agrees_with_itself(key):
    program = WHOLE[key]
    devices = (RESULTS["targets"] | RESULTS["hybrid"]["targets"])[program["target"]][
        "devices"
    ]
    assert math.prod(program["mesh"].values()) == devices
    for c in program["collectives"]:
        assert c["kind"] in hlo.KINDS
        assert hlo.nbytes(" ".join(c["shapes"])) == c["result_bytes"]
        assert c["wire_bytes"] == hlo.wire_bytes(c)
        if None in c["trip_counts"]:
            assert c["runs"] is None
        else:
            assert c["runs"] == math.prod(c["trip_counts"])
        if c["kind"] == "collective-permute":
            pairs = hlo.replica_groups(c["replica_groups"])
            assert c["num_groups"] == len(pairs) and c["group_size"] is None
            continue
        groups = hlo.replica_groups(c["replica_groups"], devices)
        assert (len(groups), len(groups[0])) == (c["num_groups"], c["group_size"])
        # Every device takes part once: groups partition the devices.
        assert sorted(d for g in groups for d in g) == list(range(devices))
        full = {
            "all-gather": c["result_bytes"],
            "reduce-scatter": c["result_bytes"] * c["group_size"],
            "all-reduce": c["result_bytes"],
            "all-to-all": c["result_bytes"],
        }[c["kind"]]
        assert c["full_bytes"] == full
    # The stored totals are the records' totals.
    assert program["summary"] == hlo.summarize(program["collectives"])
    assert all(s["unknown_runs"] == 0 for s in program["summary"].values())


@pytest.mark.parametrize("key", sorted(PROGRAMS), ids=" / ".join)
def test_memory_and_cost_are_filled(key):
    program = PROGRAMS[key]
    memory, cost = program["memory"], program["cost"]
    assert set(memory) == set(driver.MEMORY_FIELDS)
    assert memory["argument_bytes"] > 0 and memory["output_bytes"] > 0
    if tg.family(key[0]) == "gpu":
        # XLA's GPU compiler gives no cost analysis for a deviceless compile: the pages
        # say "not reported" rather than a number.
        assert set(cost.values()) == {None}
    else:
        assert cost["flops"] > 0 and cost["bytes_accessed"] > 0
    assert program["compile_seconds"] > 0


def test_the_pipeline_passes_two_arrays_per_step_of_its_schedule():
    """ppermute((h, tag)) in a fori_loop of microbatches + stages - 1 steps: two permutes
    per step on CPU and TPU; on a GPU one permute carries both arrays."""
    for target, info in RESULTS["targets"].items():
        program = PROGRAMS[target, "pipeline"]
        steps_run = steps.MICROBATCHES + info["devices"] - 1
        assert program["summary"] == {
            "collective-permute": program["summary"]["collective-permute"]
        }
        arrays = {s.split("[")[1] for c in program["collectives"] for s in c["shapes"]}
        assert arrays == {"32,1024]", "]"}  # a microbatch's activations, and its tag
        per_step = 1 if tg.family(target) == "gpu" else 2
        assert program["summary"]["collective-permute"]["runs"] == per_step * steps_run


def test_the_fsdp_rule_is_the_fsdp_pages(devices):
    """steps.fsdp_rules gives, by name, what the page's shard_fsdp does to real arrays."""
    from snippets.training.fsdp.placement import data_mesh, shard_fsdp

    mesh = data_mesh()
    model = steps.MLP(steps.D, steps.HIDDEN, steps.D, rngs=nnx.Rngs(0))
    assert shard_fsdp(model, mesh) == steps.fsdp_rules(mesh)


def test_abstract_state_is_placed_as_the_choosing_page_places_real_state(devices):
    """The shapes' shardings match what place_state gives real arrays (small model)."""
    from snippets.training.choosing import strategies

    _, _, rules, batch_spec = strategies.STRATEGIES["FSDP"]
    mesh = strategies.strategy_mesh("FSDP")
    model, optimizer, x, _ = steps.abstract_training_state(mesh, rules, batch_spec)
    real = steps.MLP(steps.D, steps.HIDDEN, steps.D, rngs=nnx.Rngs(0))
    real_optimizer = nnx.Optimizer(real, optax.adam(1e-2), wrt=nnx.Param)
    strategies.place_state("FSDP", real, real_optimizer)
    shapes = nnx.state((model, optimizer))
    arrays = nnx.state((real, real_optimizer))
    specs = [leaf.sharding.spec for leaf in jax.tree.leaves(shapes)]
    real_specs = [a.sharding.spec for a in jax.tree.leaves(arrays)]
    assert specs == real_specs
    assert x.shape == (steps.BATCH, steps.D) and x.sharding.spec == batch_spec


# Daily: the stored CPU rows change only with the pinned versions, checked on every push.
@pytest.mark.daily
@pytest.mark.parametrize("strategy", list(steps.STRATEGIES))
def test_cpu_rows_are_what_this_environment_compiles(devices, strategy):
    """Recompile the CPU row here: the committed file was made by this code."""
    now = driver.describe("cpu", strategy, devices)
    stored = PROGRAMS["cpu", strategy]
    for field in ("source", "mesh", "collectives", "summary", "memory"):
        assert now[field] == stored[field], field
    assert now["cost"]["flops"] == stored["cost"]["flops"]


def test_describe_refuses_a_program_the_reader_cannot_account_for(devices, monkeypatch):
    monkeypatch.setattr(hlo.Program, "unaccounted", lambda self: ["all-reduce.1"])
    with pytest.raises(RuntimeError, match=r"all-reduce\.1"):
        driver.describe("cpu", "data parallel", devices)


# What libtpu 0.0.50.1 writes to stderr when it starts here (the trace header ends in a
# space).
LIBTPU_STDERR = "\n".join(
    [
        "Failed to find host bounds for accelerator type: WARNING: could not determine "
        "TPU accelerator type, please set env var `TPU_ACCELERATOR_TYPE` manually, "
        "otherwise libtpu.so may not properly initialize.",
        "WARNING: Logging before InitGoogle() is written to STDERR",
        "E0000 00:00:1795553957.683653    7578 common_lib.cc:860] INVALID_ARGUMENT: "
        "Error: unexpected worker hostname 'WARNING: could not determine TPU worker "
        "hostnames or IP addresses' from env var TPU_WORKER_HOSTNAMES. Expecting a "
        "valid hostname or IP address without port number, or hostname:port:address "
        "triple. (Full TPU workers' addr string: WARNING: could not determine TPU "
        "worker hostnames or IP addresses, please set env var `TPU_WORKER_HOSTNAMES` "
        "manually, otherwise libtpu.so may not properly initialize.)",
        "=== Source Location Trace: === ",
        "learning/45eac/tfrc/runtime/libtpu_init_utils.cc:370",
        "",
    ]
)


def test_libtpu_noise_is_dropped_and_real_errors_are_not():
    """The captured stderr of a libtpu start on this machine, then a real error."""
    assert tg.without_libtpu_noise(LIBTPU_STDERR) == ""
    error = "E0000 12:00:00.0 1 compiler.cc:1] INTERNAL: RET_CHECK failure\n"
    trace = "=== Source Location Trace: ===\nxla/service/compiler.cc:42\n"
    assert tg.without_libtpu_noise(LIBTPU_STDERR + error + trace) == error + trace


@pytest.mark.parametrize("family", list(tg.FAMILIES))
def test_results_file_stays_small(family):
    """Each collective's record on one line (driver.dump). 198 KB for CPU and TPU together
    in early November; the remat page's four policy steps (13 to 21 KB each per TPU target,
    the offload ones largest) took tpu.json from 231 KB to 356 KB on 27 November, and the
    sequence-split decode, ZeRO-1/2, Ulysses and load-balancing programs (1 to 4 KB each per
    target) to 400 KB the same day."""
    path = driver.results_path(family)
    assert path.stat().st_size < 450_000
    assert "HloModule" not in path.read_text()


@pytest.mark.parametrize("family", list(tg.FAMILIES))
def test_the_results_are_written_one_record_per_line_and_read_back_the_same(family):
    text = driver.results_path(family).read_text()
    assert driver.dump(json.loads(text)) == text
    sample = {
        "a": [{"kind": "all-gather", "shapes": ["f32[8]"], "x": None}],
        "b": {"c": 1},
    }
    assert json.loads(driver.dump(sample)) == sample
    assert '  {"kind": "all-gather", "shapes": ["f32[8]"], "x": null}\n' in driver.dump(
        sample
    )


def test_a_hybrid_mesh_refuses_devices_of_one_slice(devices):
    with pytest.raises(
        ValueError, match=r"2 or more equal slices or nodes.*num_slices"
    ):
        steps.hybrid_mesh(devices)


@pytest.mark.parametrize("target", tg.FAMILIES["tpu"].multi)
def test_hybrid_programs_sum_within_a_slice_then_across(target):
    """Over several slices each chip all-reduces only its share of the gradients across
    slices (the DCN formula, within the cost model's tolerance); everything else stays on
    the slice's own links."""
    from docs_build import costmodel as cm

    data = RESULTS
    described = data["hybrid"]["targets"][target]
    model = cm.MLP(data["model"]["d"], data["model"]["hidden"], data["model"]["batch"])
    for strategy in steps.HYBRID_STRATEGIES:
        p = next(
            p
            for p in data["hybrid"]["programs"]
            if p["target"] == target and p["strategy"] == strategy
        )
        assert "error" not in p, p.get("error")
        slices, chips = described["slices"], described["devices"] // described["slices"]
        assert p["mesh"] == {"slice": slices, "data": chips}
        dcn = [c for c in p["collectives"] if c["network"] == "dcn"]
        ici = [c for c in p["collectives"] if c["network"] == "ici"]
        assert dcn and ici and len(dcn) + len(ici) == len(p["collectives"])
        assert {c["group_size"] for c in dcn} == {slices}
        assert {c["group_size"] for c in ici} == {chips}
        sent = sum(c["wire_bytes"] * c["runs"] for c in dcn)
        assert sent == pytest.approx(cm.dcn_bytes(p["mesh"], model), rel=cm.TOLERANCE)


def test_the_three_approaches_compile_as_the_pages_own(devices, capsys):
    """The steps rebuilt from shapes compile to the collectives of the page's programs."""
    from snippets.concepts.three_approaches import automatic, explicit, layer, manual

    x, W, b, reference = layer.make_data()
    _, *auto_args = automatic.place_on_auto_mesh(x, W, b)
    mesh, *args = explicit.place_on_explicit_mesh(x, W, b)
    page = {
        "automatic": automatic.run_automatic(*auto_args, reference)[1],
        "explicit": explicit.run_explicit(mesh, *args, reference)[1],
        "manual": manual.run_manual(mesh, *args, reference)[1],
    }
    capsys.readouterr()
    for approach, compiled in page.items():
        ours = steps.APPROACHES[approach](devices).compile()
        shown = [
            (c.kind, c.shapes, c.group_size)
            for c in hlo.read(compiled.as_text()).collectives
        ]
        rebuilt = [
            (c.kind, c.shapes, c.group_size)
            for c in hlo.read(ours.as_text()).collectives
        ]
        assert shown == rebuilt == [("all-reduce", ("f32[4]",), 8)], approach


def test_every_approach_compiles_to_one_all_reduce_on_every_target():
    group = RESULTS["approaches"]
    everywhere = [t for f in tg.FAMILIES.values() for t in f.approaches]
    assert group["targets"] == everywhere
    assert len(group["programs"]) == len(everywhere) * len(steps.APPROACHES)
    for p in group["programs"]:
        assert "error" not in p, p.get("error")
        found = [(c["kind"], c["shapes"], c["group_size"]) for c in p["collectives"]]
        assert found == [("all-reduce", ["f32[4]"], 8)], (p["target"], p["strategy"])


def test_the_layer_refuses_a_device_count_that_does_not_split_it():
    with pytest.raises(ValueError, match=r"32 inputs do not split over 64 devices"):
        steps.automatic_step([object()] * 64)


def test_a_missing_pin_stops_the_driver_naming_package_and_version():
    """The tests' environment has no CUDA plugin: the gpu family refuses to start here."""
    with pytest.raises(SystemExit, match=r"needs jax-cuda12-plugin==0\.12\.0\.1"):
        driver.require("gpu")
    driver.require("cpu")  # and the cpu family has what it needs


def test_a_target_that_cannot_be_made_is_recorded_not_dropped(monkeypatch):
    """Every program of a target whose devices fail carries the error, and so does the
    target: the table never loses a row silently."""

    def fail(target):
        raise tg.TargetError(f"{target}: no topology")

    monkeypatch.setattr(tg, "devices", fail)
    result = driver.compile_family("cpu", only_strategies=["data parallel", "FSDP"])
    rows = result["programs"]
    assert [(p["target"], p["strategy"]) for p in rows] == [
        ("cpu", "data parallel"),
        ("cpu", "FSDP"),
    ]
    assert all(p["error"] == "TargetError: cpu: no topology" for p in rows)
    assert result["targets"]["cpu"] == {"error": "TargetError: cpu: no topology"}


def test_a_failed_compile_is_recorded_with_its_error(devices, monkeypatch):
    def broken(devices):
        raise ValueError("no such layout")

    monkeypatch.setitem(steps.STRATEGIES, "data parallel", broken)
    result = driver.compile_family("cpu", only_strategies=["data parallel"])
    (row,) = result["programs"]
    assert row == {
        "target": "cpu",
        "strategy": "data parallel",
        "error": "ValueError: no such layout",
    }


def test_the_schedule_is_the_entry_computations_collectives_and_matmuls_in_order():
    """Read from the stored H100 data-parallel fixture, worked out by hand: the first
    all-reduce starts, one gradient matmul runs, it is awaited, the second all-reduce
    starts and is awaited; and the committed h100:1x8 row says the same."""
    from pathlib import Path

    text = (Path(__file__).parent / "fixtures" / "gpu_h100x8_dp_step.hlo").read_text()
    records = [c.as_record() for c in hlo.read(text).collectives]
    assert driver.schedule(text, records) == [
        ["all-reduce-start", "all-reduce-start.1", ["f32[4199425]"]],
        ["matmul", 1, None],
        ["all-reduce-done", "all-reduce-done.1", None],
        ["all-reduce-start", "all-reduce-start", ["f32[1024,4096]"]],
        ["all-reduce-done", "all-reduce-done", None],
    ]
    assert PROGRAMS["h100:1x8", "data parallel"]["schedule"] == driver.schedule(
        text, records
    )
    # "a matmul runs while it travels (the gradient of the other kernel, which the second
    # all-reduce then carries)": the matmul between the first start and its done is the
    # second start's operand
    entry = hlo.parse(text)
    order = list(entry.computations[entry.entry].instructions.values())
    names = [i.name for i in order]
    between = order[
        names.index("all-reduce-start.1") + 1 : names.index("all-reduce-done.1")
    ]
    matmuls = [i.name for i in between if i.name.startswith("gemm_fusion")]
    second = order[names.index("all-reduce-start")]
    assert matmuls == second.operands == ["gemm_fusion_dot.6"]
