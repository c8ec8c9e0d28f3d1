import re
from pathlib import Path

import jax
import numpy as np
import optax
import pytest
from flax import nnx
from jax import P
from jax.sharding import Mesh

from snippets.hlo import count_collectives, read_collectives
from snippets.models import D_HIDDEN, D_IN, D_OUT, MLP, train_reference, train_step
from snippets.training.fsdp import step, zero
from tests.training.fsdp.printed import quietly

PAGE = Path(__file__).resolve().parents[3] / "docs" / "training" / "fsdp.md"
P_BYTES = 21024
ATOL = 1e-5  # the page's tolerance, as for FSDP


def dp_step(model, optimizer, x, y):
    """The page's data-parallel `step`, which ZeRO-1 jits with out_shardings."""
    loss = train_step(model, optimizer, x, y)
    return loss, model, optimizer


@pytest.fixture(scope="module")
def placed_zero(placed, replicated, data_mesh):
    specs, model, optimizer = placed[0]
    return quietly(zero.place_zero, specs, data_mesh, *replicated, model, optimizer)


@pytest.fixture(scope="module")
def zero1(placed_zero, data, data_mesh):
    zero_model, zero_optimizer = placed_zero[0]
    return quietly(
        zero.compile_zero1, dp_step, zero_model, zero_optimizer, data[0], data_mesh
    )


@pytest.fixture(scope="module")
def zero2(placed_zero, zero1, placed, data, data_mesh):
    zero_model, zero_optimizer = placed_zero[0]
    compiled, _, layouts = zero1[0]
    model = placed[0][1]
    return quietly(
        zero.compile_zero2,
        zero_model,
        zero_optimizer,
        data[0],
        model,
        layouts,
        compiled,
        data_mesh,
    )


def moments(optimizer):
    adam = optimizer.opt_state[0]
    return {
        f"{m} {layer}.{p}": getattr(adam, m)[layer][p][...]
        for m in ("mu", "nu")
        for layer in ("up", "down")
        for p in ("kernel", "bias")
    }


def test_the_moments_are_split_by_the_fsdp_rule_and_the_parameters_whole(
    placed, placed_zero
):
    specs = placed[0][0]
    zero_model, zero_optimizer = placed_zero[0]
    for key, array in moments(zero_optimizer).items():
        assert array.sharding.spec == specs[key.split()[1]]
    mu = zero_optimizer.opt_state[0].mu["up"]["kernel"][...]
    assert {s.data.shape for s in mu.addressable_shards} == {(32, 16)}
    kernel = zero_model.up.kernel[...]
    assert kernel.sharding.spec == P()
    assert {s.data.shape for s in kernel.addressable_shards} == {(32, 128)}
    assert zero_optimizer.opt_state[0].count[...].sharding.spec == P()


def test_zero1_stores_whole_parameters_and_an_eighth_of_each_moment(placed_zero):
    (zero_model, zero_optimizer), out = placed_zero
    eighth = P_BYTES // 8
    assert zero.bytes_per_device(zero_model, zero_optimizer) == [
        P_BYTES,
        eighth,
        eighth,
        P_BYTES + 2 * eighth,
    ]
    table = [re.split(r"\s{2,}", line.strip()) for line in out.splitlines()]
    assert table == [
        ["params", "mu", "nu", "total"],
        ["replicated", "21024", "21024", "21024", "63072"],
        ["ZeRO-1", "21024", "2628", "2628", "26280"],
        ["FSDP", "2628", "2628", "2628", "7884"],
    ]
    text = " ".join(PAGE.read_text().split())
    assert "P + 2P / 8: between data parallelism's 3P and FSDP's 3P / 8" in text


def test_zero1_all_reduces_the_gradient_and_gathers_the_updated_parameters(
    zero1, placed, data, data_mesh
):
    (compiled, _, _), out = zero1
    assert count_collectives(compiled) == {"all-reduce": 1, "all-gather": 4}
    found = [(c.kind, c.result, c.result_bytes) for c in read_collectives(compiled)]
    gathers = sorted(shape for kind, shape, _ in found if kind == "all-gather")
    assert gathers == ["f32[128,8]", "f32[128]", "f32[32,128]", "f32[8]"]
    assert sum(n for kind, _, n in found if kind == "all-gather") == P_BYTES
    assert ("all-reduce", "(f32[], f32[8], f32[8,128], f32[128], f32[128,32])") in [
        f[:2] for f in found
    ]
    # What the gathers carry: each parameter after the update's add.
    text = compiled.as_text()
    gathered = re.findall(r"%(all-gather[.\d]*) = .*op_name=\"([^\"]+)\"", text)
    assert len(gathered) == 4 and all(op.endswith("/add") for _, op in gathered)
    # The same collectives, with the same results, as the page's FSDP step.
    _, model, optimizer = placed[0]
    fsdp, _ = quietly(
        step.compile_fsdp,
        step.fsdp_step_for(data_mesh),
        model,
        optimizer,
        data[0],
    )
    fsdp_found = [(c.kind, c.result, c.result_bytes) for c in read_collectives(fsdp)]
    assert sorted(found) == sorted(fsdp_found)
    # Parameters come back whole, the moments split.
    params = [s.spec for s in jax.tree.leaves(compiled.output_shardings[1])]
    assert params == [P()] * 4
    state = [s.spec for s in jax.tree.leaves(compiled.output_shardings[2])]
    assert state.count(P()) == 2 and P(None, "data") in state  # count, step; moments
    assert out.splitlines()[1].startswith("all-reduce              8        21,028")


def test_without_out_shardings_the_cpu_program_returns_fsdps_layout(zero1):
    (_, loose, _), out = zero1
    assert count_collectives(loose) == {"all-reduce": 1}
    specs = [s.spec for s in jax.tree.leaves(loose.output_shardings[1])]
    assert specs == [P("data"), P("data"), P("data"), P(None, "data")]
    assert out.splitlines()[-3:] == [
        "without out_shardings:",
        "all-reduce          1",
        "up.kernel comes back P(None, 'data')",
    ]


def test_zero2_on_the_cpu_keeps_the_all_reduce(zero1, zero2, placed):
    (compiled2, homes), out = zero2
    compiled1 = zero1[0][0]
    specs = placed[0][0]
    assert {k: v.spec for k, v in nnx.to_flat_state(homes)} == {
        tuple(k.split(".")): v for k, v in specs.items()
    }
    assert "reduce-scatter" not in count_collectives(compiled2)
    assert read_collectives(compiled2) == read_collectives(compiled1)
    assert out.splitlines() == [
        "all-reduce          1",
        "all-gather          4",
        "the same collectives as ZeRO-1: True",
    ]
    text = " ".join(PAGE.read_text().split())
    assert "The CPU compiler did not use a reduce-scatter" in text


def test_zero1_and_zero2_train_like_one_device(placed_zero, zero1, zero2, data):
    zero_model, zero_optimizer = placed_zero[0]
    reference_losses, reference = train_reference(steps=5, batch=64)
    trained, out = quietly(
        zero.train_zero,
        zero_model,
        zero_optimizer,
        data[0],
        zero1[0][0],
        zero2[0][0],
        reference_losses,
        reference,
    )
    for label in ("ZeRO-1", "ZeRO-2"):
        z_model, z_optimizer, z_losses = trained[label]
        np.testing.assert_allclose(z_losses, reference_losses, rtol=1e-6, atol=1e-6)
        for a, b in zip(
            jax.tree.leaves(nnx.state(z_model, nnx.Param)),
            jax.tree.leaves(nnx.state(reference, nnx.Param)),
            strict=True,
        ):
            np.testing.assert_allclose(a, b, atol=ATOL)
        assert z_model.up.kernel[...].sharding.spec == P()
        mu = z_optimizer.opt_state[0].mu["up"]["kernel"][...]
        assert mu.sharding.spec == P(None, "data")
    assert out.splitlines() == [
        "ZeRO-1: losses and parameters within 1e-05 of one device: True",
        "ZeRO-2: losses and parameters within 1e-05 of one device: True",
        "up.kernel: P()",
        "its mu:    P(None, 'data')",
    ]


def fresh_optimizer():
    model = MLP(D_IN, D_HIDDEN, D_OUT, rngs=nnx.Rngs(0))
    return nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)


def test_a_dimension_the_axis_does_not_divide_is_refused(placed, devices):
    specs = placed[0][0]
    three = Mesh(np.array(jax.devices()[:3]), ("data",))
    with pytest.raises(ValueError) as err:
        zero.shard_moments(fresh_optimizer(), specs, three)
    assert str(err.value) == (
        "mu of down.bias: dimension 0 has size 8, which the 3 devices of 'data' do "
        "not divide: split a dimension that 3 divides, or keep it whole with P()."
    )


def test_an_axis_the_mesh_does_not_have_is_refused(placed, data_mesh):
    with pytest.raises(ValueError, match=r"no axis 'batch': name one of \('data',\)"):
        zero.shard_moments(fresh_optimizer(), placed[0][0], data_mesh, axis="batch")
