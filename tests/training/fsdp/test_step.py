import jax
import numpy as np
import pytest
from flax import nnx
from jax import P

from snippets.hlo import count_collectives, read_collectives
from snippets.training.fsdp import step
from tests.training.fsdp.printed import quietly

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
