"""The TPU evidence: the committed results.json is complete, made with the pins, agrees with
itself, and its CPU rows are what this environment compiles today.

The tests environment has no libtpu: the TPU rows are checked for consistency, and the
CPU rows (made by the same code, in the same run) are recompiled here and compared.
"""

import json
import math
import tomllib
from pathlib import Path

import jax
import optax
import pytest
from flax import nnx

from docs_build import hlo
from docs_build.tpu import driver, steps

ROOT = Path(__file__).resolve().parents[2]
RESULTS = json.loads(driver.RESULTS.read_text())
PROGRAMS = {(p["target"], p["strategy"]): p for p in RESULTS["programs"]}
TPU_ROWS = [p for p in RESULTS["programs"] if p["target"] != "cpu"]


def pins() -> dict[str, str]:
    groups = tomllib.loads((ROOT / "pyproject.toml").read_text())["dependency-groups"]
    found = {}
    for requirement in [*groups["examples"], *groups["tpu"]]:
        if isinstance(requirement, str):
            name, _, version = requirement.partition("==")
            found[name.split("[")[0]] = version
    return found


def test_every_target_and_strategy_compiled():
    expected = {(t, s) for t in driver.TARGETS for s in steps.STRATEGIES}
    assert set(PROGRAMS) == expected
    assert len(RESULTS["programs"]) == len(expected)  # no duplicates
    errors = {k: p["error"] for k, p in PROGRAMS.items() if "error" in p}
    assert not errors


def test_made_with_the_pinned_jax_jaxlib_and_libtpu():
    """Moving a pin without running `nox -s tpu` fails here."""
    made, pinned = RESULTS["versions"], pins()
    for name in ("jax", "jaxlib", "libtpu", "flax", "optax"):
        assert made[name] == pinned[name], (
            f"results.json was made with {name} {made[name]}, the pin is "
            f"{pinned[name]}: run `nox -s tpu` and commit the result"
        )


def test_results_were_made_from_the_code_as_it_is():
    """An edit to a step, the page code it compiles, the driver or the reader, without
    `nox -s tpu`, fails here rather than leaving the pages' TPU figures stale."""
    now = driver.inputs_digest()
    stale = sorted(p for p in now if RESULTS["inputs"].get(p) != now[p])
    assert not stale, (
        f"docs_build/tpu/results.json is older than {stale}: run `nox -s tpu` and commit "
        "the result"
    )


def test_targets_are_what_they_say():
    targets = RESULTS["targets"]
    assert targets["cpu"] == {"devices": 8, "device_kind": "cpu", "platform": "cpu"}
    for name, target in targets.items():
        if name == "cpu":
            continue
        chips = math.prod(int(n) for n in name.split(":")[1].split("x"))
        assert target["devices"] == chips and target["platform"] == "tpu"
        assert (
            target["device_kind"]
            == {"v5e": "TPU v5 lite", "v5p": "TPU v5"}[name.split(":")[0]]
        )


@pytest.mark.parametrize("key", sorted(PROGRAMS), ids=" / ".join)
def test_each_program_agrees_with_itself(key):
    program = PROGRAMS[key]
    devices = RESULTS["targets"][program["target"]]["devices"]
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
    assert cost["flops"] > 0 and cost["bytes_accessed"] > 0
    assert program["compile_seconds"] > 0


def test_the_pipeline_passes_two_arrays_per_step_of_its_schedule():
    """ppermute((h, tag)) in a fori_loop of microbatches + stages - 1 steps."""
    for target, info in RESULTS["targets"].items():
        program = PROGRAMS[target, "pipeline"]
        steps_run = steps.MICROBATCHES + info["devices"] - 1
        assert program["summary"] == {
            "collective-permute": program["summary"]["collective-permute"]
        }
        assert program["summary"]["collective-permute"]["runs"] == 2 * steps_run


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
    assert driver.without_libtpu_noise(LIBTPU_STDERR) == ""
    error = "E0000 12:00:00.0 1 compiler.cc:1] INTERNAL: RET_CHECK failure\n"
    trace = "=== Source Location Trace: ===\nxla/service/compiler.cc:42\n"
    assert driver.without_libtpu_noise(LIBTPU_STDERR + error + trace) == error + trace


def test_results_file_stays_small():
    """85 programs, each collective's record on one line (driver.dump): 198 KB in November."""
    assert driver.RESULTS.stat().st_size < 256_000
    assert "HloModule" not in driver.RESULTS.read_text()


def test_the_results_are_written_one_record_per_line_and_read_back_the_same():
    text = driver.RESULTS.read_text()
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
    with pytest.raises(ValueError, match=r"2 or more equal slices.*num_slices >= 2"):
        steps.hybrid_mesh(devices)


@pytest.mark.parametrize("target", driver.HYBRID_TARGETS)
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
    assert group["targets"] == list(driver.APPROACH_TARGETS)
    assert len(group["programs"]) == len(driver.APPROACH_TARGETS) * len(
        steps.APPROACHES
    )
    for p in group["programs"]:
        assert "error" not in p, p.get("error")
        found = [(c["kind"], c["shapes"], c["group_size"]) for c in p["collectives"]]
        assert found == [("all-reduce", ["f32[4]"], 8)], (p["target"], p["strategy"])


def test_the_layer_refuses_a_device_count_that_does_not_split_it():
    with pytest.raises(ValueError, match=r"32 inputs do not split over 64 devices"):
        steps.automatic_step([object()] * 64)
