from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from jax import P

from docs_build import hlo
from snippets.hlo import count_collectives, read_collectives
from snippets.training.fsdp import step
from tests.training.fsdp.printed import quietly

PAGE = Path(__file__).resolve().parents[3] / "docs" / "training" / "fsdp.md"
P_BYTES = 21024
# The tolerance the page states: parameters after five Adam steps within 1e-5.
ATOL = 1e-5


@pytest.fixture(scope="module")
def fsdp(placed, data, data_mesh):
    _, model, optimizer = placed[0]
    fsdp_step = step.fsdp_step_for(data_mesh)
    compiled, out = quietly(step.compile_fsdp, fsdp_step, model, optimizer, data[0])
    trained, printed = quietly(
        step.train_and_compare, model, optimizer, data[0], compiled
    )
    return compiled, out, trained, printed


def test_the_batch_is_split_eight_ways(data):
    batches, out = data
    assert len(batches) == 5
    for x, y in batches:
        assert x.sharding.spec == P("data") and y.sharding.spec == P("data")
        assert {s.data.shape for s in x.addressable_shards} == {(8, 32)}
    assert out.splitlines() == ["x: (64, 32) P('data',)", "per device: (8, 32)"]


def test_left_alone_the_compiler_gathers_the_batch_not_the_weights(placed, data):
    _, model, optimizer = placed[0]
    naive, out = quietly(step.left_to_the_compiler, model, optimizer, data[0])
    assert count_collectives(naive) == {"all-reduce": 2, "all-gather": 3}
    found = [(c.kind, c.result, c.result_bytes) for c in read_collectives(naive)]
    assert ("all-gather", "f32[64,32]", 64 * 32 * 4) in found  # all of x
    assert ("all-reduce", "f32[64,8]", 64 * 8 * 4) in found  # partial outputs
    assert out.startswith("all-reduce          2\nall-gather          3\n\n")
    assert (
        "all-gather              8         8,192        7,168     1  f32[64,32]" in out
    )


def test_fsdp_step_gathers_each_parameter_and_all_reduces_the_gradients(fsdp):
    compiled, out = fsdp[0], fsdp[1]
    assert count_collectives(compiled) == {"all-reduce": 1, "all-gather": 4}
    found = [(c.kind, c.result, c.result_bytes) for c in read_collectives(compiled)]
    gathers = sorted(shape for kind, shape, _ in found if kind == "all-gather")
    assert gathers == ["f32[128,8]", "f32[128]", "f32[32,128]", "f32[8]"]
    assert sum(n for kind, _, n in found if kind == "all-gather") == P_BYTES
    reduces = [(shape, n) for kind, shape, n in found if kind == "all-reduce"]
    assert reduces == [
        ("(f32[], f32[8], f32[8,128], f32[128], f32[128,32])", P_BYTES + 4)
    ]
    # The CPU backend: no reduce-scatter, the full gradient comes back to every device.
    assert "reduce-scatter" not in compiled.as_text()
    assert out.splitlines()[:3] == [
        "all-reduce          1",
        "all-gather          4",
        "",
    ]


def test_the_parameters_stay_split_through_the_step(fsdp):
    compiled = fsdp[0]
    # The compiled step's output shardings for the model, in the order of its leaves:
    # down.bias, down.kernel, up.bias, up.kernel.
    specs = [s.spec for s in jax.tree.leaves(compiled.output_shardings[1])]
    assert specs == [P("data"), P("data"), P("data"), P(None, "data")]


def test_data_parallel_needs_only_the_gradient_all_reduce(replicated, data, capsys):
    data_parallel = step.data_parallel_for_comparison(*replicated, data[0])
    assert count_collectives(data_parallel) == {"all-reduce": 1}
    (c,) = read_collectives(data_parallel)
    assert (c.result_bytes, c.wire_bytes) == (P_BYTES + 4, 2 * 7 / 8 * (P_BYTES + 4))
    assert capsys.readouterr().out.splitlines()[1] == (
        "all-reduce              8        21,028       36,799     1  "
        "(f32[], f32[8], f32[8,128], f32[128], f32[128,32])"
    )


def test_five_fsdp_steps_match_the_single_device_reference(fsdp):
    losses, reference_losses, model, optimizer, reference = fsdp[2]
    np.testing.assert_allclose(losses, reference_losses, rtol=1e-6, atol=1e-6)
    for a, b in zip(
        jax.tree.leaves(nnx.state(model, nnx.Param)),
        jax.tree.leaves(nnx.state(reference, nnx.Param)),
        strict=True,
    ):
        np.testing.assert_allclose(a, b, atol=ATOL)
    assert model.up.kernel[...].sharding.spec == P(None, "data")
    assert {s.data.shape for s in model.up.kernel[...].addressable_shards} == {(32, 16)}
    mu = optimizer.opt_state[0].mu["up"]["kernel"][...]
    assert mu.sharding.spec == P(None, "data")
    lines = fsdp[3].splitlines()
    assert lines[0] == "step  one device   FSDP"
    for line in lines[1:6]:
        _, a, b = line.split()
        assert a == b and len(a.split(".")[1]) == 3
    assert lines[6] == "parameters within 1e-05 of one device: True"
    assert lines[7:] == ["up.kernel: P(None, 'data')", "its mu:    P(None, 'data')"]


def test_a_batch_of_60_is_refused_and_56_fits(data_mesh, capsys):
    step.batch_of_sixty(data_mesh)
    assert capsys.readouterr().out == (
        "ValueError: A batch of 60 inputs and 60 targets does not split over the 8 "
        "devices of the 'data' axis: make it a multiple of 8, or use fewer devices on "
        "'data'.\n"
    )
    x56, y56 = step.batch_of_sixty_trimmed(data_mesh)
    assert x56.shape == (56, 32) and y56.shape == (56, 8)
    assert {s.data.shape for s in x56.addressable_shards} == {(7, 32)}
    assert capsys.readouterr().out == "per device: (7, 32)\n"


def test_fsdp_keeps_less_but_holds_the_whole_model_during_the_step(
    fsdp, placed, replicated, data, capsys
):
    """The page's claim about memory during the step, from the compiler's own report."""
    compiled = fsdp[0]
    data_parallel, _ = quietly(step.data_parallel_for_comparison, *replicated, data[0])
    capsys.readouterr()
    memory = step.memory_during_step(compiled, data_parallel)
    model = placed[0][1]
    weights = 4 * sum(p.size for p in jax.tree.leaves(nnx.state(model, nnx.Param)))
    assert weights == P_BYTES
    (fsdp_args, fsdp_temp), (dp_args, dp_temp) = memory["FSDP"], memory["data parallel"]
    assert fsdp_args < dp_args / 4  # slices of weights and Adam's state
    assert fsdp_temp > weights > dp_temp  # the gathered weights and their gradients
    title, *lines = capsys.readouterr().out.splitlines()
    assert title == "Bytes per device, cpu backend"
    assert (
        lines[0]
        == f"FSDP           arguments {fsdp_args:>7,}  temporary {fsdp_temp:>7,}"
    )


def test_the_gradient_of_the_constraint_asks_for_the_whole_gradient(data_mesh):
    """The page's warning: the transpose of a sharding constraint to P() is the same
    constraint on the gradient, so the summed gradient is asked for whole everywhere."""
    everywhere = jax.sharding.NamedSharding(data_mesh, P())

    def gather(p):
        return jax.lax.with_sharding_constraint(p, everywhere)

    p = np.ones((32, 128), np.float32)
    jaxpr = jax.make_jaxpr(lambda p, ct: jax.vjp(gather, p)[1](ct))(p, p).jaxpr
    constraints = [e for e in jaxpr.eqns if e.primitive.name == "sharding_constraint"]
    assert len(constraints) == 2  # the forward gather, and the same on the gradient
    assert all(e.params["sharding"].spec == P() for e in constraints)
    assert constraints[1].invars[0] is jaxpr.invars[1]  # applied to the cotangent
    text = " ".join(PAGE.read_text().split())
    assert (
        "the gradient of a sharding constraint is the same constraint on the gradient"
        in text
    )
    assert "depends on the program and the compiler version" not in text


def test_a_gather_written_with_shard_map_sums_the_gradient_with_a_reduce_scatter(
    data_mesh,
):
    """The page's way out: all_gather inside shard_map, whose gradient is psum_scatter;
    even the CPU program then holds a reduce-scatter, of one device's share."""

    def loss(w_block, x_block):
        w = jax.lax.all_gather(w_block, "data", axis=1, tiled=True)
        return jax.lax.psum(jnp.sum(jnp.tanh(x_block @ w)), "data")

    grad = jax.jit(
        jax.shard_map(
            jax.grad(loss),
            mesh=data_mesh,
            in_specs=(P(None, "data"), P("data")),
            out_specs=P(None, "data"),
        )
    )
    w = np.random.default_rng(0).normal(size=(32, 128)).astype(np.float32)
    x = np.random.default_rng(1).normal(size=(64, 32)).astype(np.float32)
    compiled = grad.lower(w, x).compile()
    assert count_collectives(compiled) == {"all-gather": 1, "reduce-scatter": 1}
    scattered = [
        c
        for c in hlo.read(compiled.as_text()).collectives
        if c.kind == "reduce-scatter"
    ]
    assert [c.result_bytes for c in scattered] == [32 * 16 * 4]  # one device's share
    expected = jax.grad(lambda w: jnp.sum(jnp.tanh(x @ w)))(w)
    np.testing.assert_allclose(grad(w, x), expected, rtol=1e-5, atol=1e-5)


def test_a_custom_vjp_gather_still_all_reduces_on_the_cpu(data_mesh):
    """The page: with the gradient constrained back to the parameter's layout in a
    custom_vjp, the CPU program still sums it with an all-reduce (it emits no
    reduce-scatter when partitioning); the values are right."""
    home = jax.sharding.NamedSharding(data_mesh, P(None, "data"))
    everywhere = jax.sharding.NamedSharding(data_mesh, P())

    @jax.custom_vjp
    def gather(w):
        return jax.lax.with_sharding_constraint(w, everywhere)

    def forward(w):
        return gather(w), None

    def backward(_, g):
        return (jax.lax.with_sharding_constraint(g, home),)

    gather.defvjp(forward, backward)
    rows = jax.sharding.NamedSharding(data_mesh, P("data"))
    w = jax.device_put(np.random.default_rng(0).normal(size=(32, 128)), home)
    x = jax.device_put(np.random.default_rng(1).normal(size=(64, 32)), rows)
    grad = jax.jit(jax.grad(lambda w, x: jnp.sum(jnp.tanh(x @ gather(w)))))
    compiled = grad.lower(w, x).compile()
    found = count_collectives(compiled)
    assert "reduce-scatter" not in found and found.get("all-reduce", 0) >= 1
    expected = jax.grad(lambda w: jnp.sum(jnp.tanh(np.asarray(x) @ w)))(np.asarray(w))
    np.testing.assert_allclose(grad(w, x), expected, rtol=1e-5, atol=1e-5)
    assert grad(w, x).sharding.spec == P(None, "data")
