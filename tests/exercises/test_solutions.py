"""The reference solutions: each passes its grader, checks its inputs, and runs on one device."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from jax import P
from jax.sharding import AxisType, NamedSharding

from snippets.exercises import check, solution
from snippets.exercises.registry import EXERCISES
from snippets.hlo import count_collectives

column_sums = solution("column_sums")
fsdp_shard = solution("fsdp_shard")
gpipe_schedule = solution("gpipe_schedule")
manual_dense = solution("manual_dense")
matmul_rows = solution("matmul_rows")
mesh_shape_for = solution("mesh_shape_for")
moe_dispatch = solution("moe_dispatch")
per_device_bytes = solution("per_device_bytes")
place_batch = solution("place_batch")
process_rows = solution("process_rows")
remat_budget = solution("remat_budget")
ring_all_gather = solution("ring_all_gather")
sharded_linear = solution("sharded_linear")

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", list(EXERCISES))
def test_the_reference_solution_passes_its_grader(name, capsys):
    path = EXERCISES[name].solution.split(":")[0]
    assert check.main([name, path]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1].startswith(f"PASSED: {name} is right on all ")
    assert "FAILED" not in out


def test_every_exercise_has_a_reference_solution():
    for name in EXERCISES:
        assert solution(name).__name__ == name


def test_every_exercise_has_a_starter_with_the_same_signature():
    import inspect
    import runpy

    for name, exercise in EXERCISES.items():
        starter = runpy.run_path(str(ROOT / f"snippets/exercises/{name}/starter.py"))
        signature = inspect.signature(starter[name])
        assert tuple(signature.parameters) == exercise.params
        assert "Check: python -m snippets.exercises.check " + name in (
            (ROOT / f"snippets/exercises/{name}/starter.py").read_text()
        )
        with pytest.raises(NotImplementedError):
            starter[name](*exercise.params)


@pytest.mark.parametrize("n", [8, 4])
def test_the_ring_compiles_to_n_minus_one_collective_permutes(n):
    ring = jax.make_mesh(
        (n,), ("x",), axis_types=(AxisType.Explicit,), devices=jax.devices()[:n]
    )
    x = jax.device_put(jnp.arange(2.0 * n), NamedSharding(ring, P("x")))
    compiled = jax.jit(ring_all_gather, static_argnums=1).lower(x, ring).compile()
    assert count_collectives(compiled) == {"collective-permute": n - 1}


def test_a_whole_result_costs_column_sums_an_all_gather():
    """CPU backend: the all-reduce that finishes the sums, then one all-gather."""
    auto = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    x = jax.device_put(np.ones((8, 4)), NamedSharding(auto, P("x", "y")))
    whole = jax.jit(column_sums, static_argnums=1).lower(x, auto).compile()
    assert count_collectives(whole) == {"all-reduce": 1, "all-gather": 1}
    split = jax.jit(lambda a: a.sum(axis=0)).lower(x).compile()
    assert count_collectives(split) == {"all-reduce": 1}


def test_the_concept_solutions_check_their_inputs(mesh, line_mesh):
    with pytest.raises(
        ValueError, match=r"column_sums needs a 2-D x, not shape \(8,\)"
    ):
        column_sums(jnp.zeros(8), mesh)
    data = jax.make_mesh((8,), ("data",), axis_types=(AxisType.Explicit,))
    with pytest.raises(
        ValueError, match=r"The mesh has axes \('data',\); this needs 'x'"
    ):
        matmul_rows(jnp.zeros((8, 8)), jnp.zeros((8, 8)), data)
    with pytest.raises(
        ValueError, match=r"The mesh has axes \('data',\); this needs 'x'"
    ):
        manual_dense(jnp.zeros(8), jnp.zeros((8, 2)), jnp.zeros(2), data)


def test_place_batch_says_what_to_change(line_mesh):
    mesh = jax.make_mesh((8,), ("data",), axis_types=(AxisType.Explicit,))
    with pytest.raises(ValueError) as info:
        place_batch(np.zeros((12, 4)), mesh)
    assert str(info.value) == (
        "A batch of shape (12, 4) does not split over the 8 devices of mesh axis "
        "'data': make the batch size a multiple of 8."
    )
    with pytest.raises(ValueError, match=r"needs a mesh axis named 'data'; this mesh"):
        place_batch(np.zeros((8, 4)), line_mesh)


def test_ring_all_gather_checks_its_mesh_and_input(mesh, line_mesh):
    with pytest.raises(ValueError, match=r"needs a 1-D mesh, not \('x', 'y'\)"):
        ring_all_gather(jnp.zeros(8), mesh)
    with pytest.raises(ValueError, match=r"a multiple of 8: \(12,\)"):
        ring_all_gather(jnp.zeros(12), line_mesh)


def test_per_device_bytes_checks_the_spec(mesh):
    assert per_device_bytes((8, 16), jnp.float32, P("x", "y"), mesh) == 4 * 4 * 4
    assert per_device_bytes((8, 16), jnp.bfloat16, P(None, ("x", "y")), mesh) == 32
    with pytest.raises(ValueError, match="more entries than"):
        per_device_bytes((8,), jnp.float32, P("x", "y"), mesh)
    with pytest.raises(ValueError, match=r"names \['z'\], not in \('x', 'y'\)"):
        per_device_bytes((8, 16), jnp.float32, P("z"), mesh)
    with pytest.raises(ValueError, match="A dimension of size 6 does not split over 4"):
        per_device_bytes((8, 6), jnp.float32, P("x", "y"), mesh)


def test_fsdp_shard_splits_the_largest_dimension_that_divides():
    data = jax.make_mesh((8,), ("data",), axis_types=(AxisType.Explicit,))
    model = fsdp_shard(nnx.Linear(6, 24, rngs=nnx.Rngs(0)), data)
    assert model.kernel[...].sharding.spec == P(None, "data")  # 24, not 6
    assert model.bias[...].sharding.spec == P("data")
    whole = fsdp_shard(nnx.Linear(6, 12, rngs=nnx.Rngs(0)), data)  # nothing divides
    for param in (whole.kernel[...], whole.bias[...]):
        assert param.sharding.spec == P() and param.sharding.mesh == data


def test_sharded_linear_checks_the_mesh_and_size():
    model_mesh = jax.make_mesh((8,), ("model",), axis_types=(AxisType.Explicit,))
    with pytest.raises(ValueError, match="d_out=12 does not split over the 8 devices"):
        sharded_linear(4, 12, model_mesh, 0)
    data_mesh = jax.make_mesh((8,), ("data",), axis_types=(AxisType.Explicit,))
    with pytest.raises(ValueError, match=r"The mesh has axes \('data',\): no 'model'"):
        sharded_linear(4, 8, data_mesh, 0)


def test_gpipe_schedule_and_its_bubble():
    schedule = gpipe_schedule(4, 4)
    assert schedule.tolist()[0] == [0, 1, 2, 3, -1, -1, -1]
    assert schedule.tolist()[3] == [-1, -1, -1, 0, 1, 2, 3]
    assert (schedule < 0).mean() == pytest.approx(3 / 7)  # (S - 1) / (M + S - 1)
    for bad in [(0, 4), (4, 0), (2.0, 4)]:
        with pytest.raises(ValueError, match="must be a whole number >= 1"):
            gpipe_schedule(*bad)


def test_process_rows_rejects_a_device_the_sharding_does_not_use():
    four = jax.make_mesh(
        (4,), ("data",), axis_types=(AxisType.Explicit,), devices=jax.devices()[:4]
    )
    sharding = NamedSharding(four, P("data"))
    assert process_rows(sharding, (8, 2), jax.devices()[2:4]) == [4, 5, 6, 7]
    with pytest.raises(ValueError, match="is not one of the sharding's devices"):
        process_rows(sharding, (8, 2), jax.devices()[4:])


def test_remat_budget_says_when_nothing_fits():
    measured = {False: (200, 10), True: (100, 12), "dots": (150, 10)}
    assert remat_budget(measured, 160) == "dots"  # the tie in FLOPs: fewer bytes
    assert remat_budget(measured, 100) is True
    with pytest.raises(ValueError) as info:
        remat_budget(measured, 99)
    assert str(info.value) == "No policy fits 99 bytes: the least is 100 bytes."


def test_mesh_shape_for_says_when_nothing_fits():
    assert mesh_shape_for(8, 40, 16) == (2, 4)
    with pytest.raises(ValueError) as info:
        mesh_shape_for(8, 200, 16)
    assert str(info.value) == (
        "200 bytes of model state do not fit 8 devices of 16 bytes even split 8 "
        "ways: use more devices, or shrink the state (smaller model, optimizer or "
        "dtype)."
    )


@pytest.mark.parametrize("n", [8, 4])
def test_moe_dispatch_compiles_to_one_all_to_all(n):
    experts = jax.make_mesh(
        (n,), ("expert",), axis_types=(AxisType.Explicit,), devices=jax.devices()[:n]
    )
    split = NamedSharding(experts, P("expert"))
    tokens = jax.device_put(jnp.ones((4 * n, 2)), split)
    index = jax.device_put(jnp.zeros(4 * n, jnp.int32), split)
    compiled = (
        jax.jit(moe_dispatch, static_argnums=(2, 3)).lower(tokens, index, 3, experts)
    ).compile()
    assert count_collectives(compiled) == {"all-to-all": 1}


def test_moe_dispatch_checks_its_inputs(line_mesh):
    experts = jax.make_mesh((8,), ("expert",), axis_types=(AxisType.Explicit,))
    tokens, index = jnp.zeros((16, 2)), jnp.zeros(16, jnp.int32)
    with pytest.raises(ValueError, match=r"axis 'expert', not \('x',\)"):
        moe_dispatch(tokens, index, 2, line_mesh)
    with pytest.raises(ValueError, match=r"a multiple of 8 tokens, not \(12, 2\)"):
        moe_dispatch(jnp.zeros((12, 2)), jnp.zeros(12, jnp.int32), 2, experts)
    with pytest.raises(ValueError, match=r"shape \(16,\), not \(8,\)"):
        moe_dispatch(tokens, index[:8], 2, experts)
    with pytest.raises(ValueError, match="capacity must be at least 1, not 0"):
        moe_dispatch(tokens, index, 0, experts)


ONE_DEVICE = """
import jax

jax.config.update("jax_platforms", "cpu")
jax.config.update("jax_num_cpu_devices", 1)
import jax.numpy as jnp
import numpy as np
from flax import nnx
from jax import P
from jax.sharding import AxisType, NamedSharding

import snippets.exercises as ex

assert jax.device_count() == 1


def mesh(names, auto=False):
    kind = AxisType.Auto if auto else AxisType.Explicit
    return jax.make_mesh((1,) * len(names), names, axis_types=(kind,) * len(names))


def close(name, got, expected):
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-5, atol=1e-6)
    print(name, "ok")


x = np.arange(12.0, dtype=np.float32) - 3
close("shard_map_double", ex.solution("shard_map_double")(jnp.asarray(x)), 2 * x)
rows = x.reshape(6, 2)
sums = (rows**2).sum(axis=1)
close("shard_map_vs_vmap", ex.solution("shard_map_vs_vmap")(jnp.asarray(rows)), np.stack([sums, sums]))
layer = nnx.Linear(2, 3, rngs=nnx.Rngs(5))
close("shard_map_simulate", ex.solution("shard_map_simulate")(5.0, jnp.asarray(rows), 3.0, 3.0),
      np.asarray(layer(rows)).reshape(-1))

m = mesh(("x", "y"), auto=True)
placed = jax.device_put(rows, NamedSharding(m, P("x", "y")))
close("column_sums", ex.solution("column_sums")(placed, m), rows.sum(axis=0))
m = mesh(("x", "y"))
w = np.ones((2, 4), np.float32)
close("matmul_rows", ex.solution("matmul_rows")(jax.device_put(rows, NamedSharding(m, P("x", "y"))),
      jax.device_put(w, NamedSharding(m, P("y", None))), m), rows @ w)
m = mesh(("x",))
close("ring_all_gather", ex.solution("ring_all_gather")(jax.device_put(x, NamedSharding(m, P("x"))), m),
      x[None])
W = np.arange(24.0, dtype=np.float32).reshape(12, 2) / 50
b = np.array([0.5, -0.5], np.float32)
args = [jax.device_put(a, NamedSharding(m, s))
        for a, s in [(x, P("x")), (W, P("x", None)), (b, P())]]
close("manual_dense", ex.solution("manual_dense")(*args, m), 1 / (1 + np.exp(-(x @ W + b))))
m = mesh(("data",))
close("place_batch", ex.solution("place_batch")(rows[:5], m), rows[:5])
m = mesh(("model",))
lin = ex.solution("sharded_linear")(3, 5, m, 2)
close("sharded_linear", lin.kernel[...], nnx.Linear(3, 5, rngs=nnx.Rngs(2)).kernel[...])

from snippets.models import MLP

specs = ex.solution("tp_specs")("model")
m = mesh(("model",), auto=True)  # the grader's forward pass runs on Auto axes too
model = MLP(4, 8, 2, rngs=nnx.Rngs(0))
expected = np.asarray(model(rows[:, :1].repeat(4, axis=1)))
for path, param in nnx.iter_graph(model):
    if isinstance(param, nnx.Param):
        sharding = NamedSharding(m, specs[".".join(map(str, path))])
        param.set_value(jax.device_put(param[...], sharding))
close("tp_specs", model(rows[:, :1].repeat(4, axis=1)), expected)
m = mesh(("data", "model"))
print("per_device_bytes", "ok" if ex.solution("per_device_bytes")((6, 5), jnp.float32, P("data", "model"), m) == 120 else "wrong")
model = ex.solution("fsdp_shard")(MLP(4, 8, 2, rngs=nnx.Rngs(0)), mesh(("data",)))
print("fsdp_shard", "ok" if model.up.kernel[...].sharding.spec == P(None, "data") else "wrong")
print("gpipe_schedule", "ok" if ex.solution("gpipe_schedule")(1, 3).tolist() == [[0, 1, 2]] else "wrong")
print("one_f_one_b", "ok" if ex.solution("one_f_one_b")(1, 2) == {(0, 0): ("F", 0), (1, 0): ("B", 0), (2, 0): ("F", 1), (3, 0): ("B", 1)} else "wrong")
sharding = NamedSharding(mesh(("data",)), P("data"))
print("process_rows", "ok" if ex.solution("process_rows")(sharding, (5, 2), jax.devices()) == list(range(5)) else "wrong")
print("mesh_shape_for", "ok" if ex.solution("mesh_shape_for")(1, 10, 16) == (1, 1) else "wrong")
print("remat_budget", "ok" if ex.solution("remat_budget")({False: (1, 1)}, 1) is False else "wrong")
m = mesh(("seq",))
q, k, v = rows, rows[::-1] / 2, rows - 1
s = q @ k.T / np.sqrt(2)
s[np.triu_indices(6, 1)] = -np.inf
w = np.exp(s - s.max(axis=1, keepdims=True))
close("ring_attention", ex.solution("ring_attention")(
      *[jax.device_put(a, NamedSharding(m, P("seq"))) for a in (q, k, v)], m),
      w / w.sum(axis=1, keepdims=True) @ v)
m = mesh(("expert",))
index = np.zeros(6, np.int32)
got = ex.solution("moe_dispatch")(*(jax.device_put(a, NamedSharding(m, P("expert"))) for a in (rows, index)), 4, m)
close("moe_dispatch", got, rows[None, :4])
logits = jnp.asarray(rows[:, :1].repeat(3, axis=1) * np.array([1.0, 0.5, -1.0], np.float32))
choices = jnp.argmax(logits, axis=1)[:, None]
close("balance_loss", ex.solution("balance_loss")(logits, choices), 3 * (jax.nn.one_hot(choices[:, 0], 3).mean(0) * jax.nn.softmax(logits).mean(0)).sum())
specs = ex.solution("zero1_specs")({"up.kernel": (5, 3), "up.bias": (3,)}, mesh(("data",)))
print("zero1_specs", "ok" if specs["moments"]["up.kernel"] == P("data") and specs["params"]["up.bias"] == P() else "wrong")

import tempfile

import optax
from orbax.checkpoint import v1 as ocp

with tempfile.TemporaryDirectory() as folder:
    model = MLP(4, 8, 2, rngs=nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    ocp.save(f"{folder}/c", {"model": nnx.state(model), "optimizer": nnx.state(optimizer)})
    specs = {"up.kernel": P(None, "model"), "up.bias": P("model"), "down.kernel": P("model"), "down.bias": P()}
    restored = ex.solution("checkpoint_restore")(f"{folder}/c", mesh(("model",)), specs)
    close("checkpoint_restore", restored["model"]["up"]["kernel"]["value"], model.up.kernel[...])
"""


@pytest.mark.slow
def test_every_reference_solution_runs_on_one_device():
    """A fresh Python with a single CPU device: meshes of size 1, any length divides."""
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "JAX_NUM_CPU_DEVICES": "1",
        "MPLBACKEND": "Agg",
    }
    env.pop("XLA_FLAGS", None)
    proc = subprocess.run(
        [
            sys.executable,
            "-W",
            "error::DeprecationWarning",
            "-c",
            textwrap.dedent(ONE_DEVICE),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [f"{name} ok" for name in ONE_DEVICE_ORDER]


ONE_DEVICE_ORDER = [
    "shard_map_double",
    "shard_map_vs_vmap",
    "shard_map_simulate",
    "column_sums",
    "matmul_rows",
    "ring_all_gather",
    "manual_dense",
    "place_batch",
    "sharded_linear",
    "tp_specs",
    "per_device_bytes",
    "fsdp_shard",
    "gpipe_schedule",
    "one_f_one_b",
    "process_rows",
    "mesh_shape_for",
    "remat_budget",
    "ring_attention",
    "moe_dispatch",
    "balance_loss",
    "zero1_specs",
    "checkpoint_restore",
]


def test_the_one_device_run_covers_every_exercise():
    assert sorted(ONE_DEVICE_ORDER) == sorted(EXERCISES)
