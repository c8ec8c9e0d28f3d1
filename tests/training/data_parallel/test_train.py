import re

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np
import optax
import pytest
from flax import nnx
from jax import P
from jax.sharding import AxisType

from snippets import models
from snippets.training.data_parallel import train


def params(model):
    return [np.asarray(p) for p in jax.tree.leaves(nnx.state(model, nnx.Param))]


def test_the_mesh_is_one_explicit_data_axis_over_all_devices(run, devices):
    assert dict(run.mesh.shape) == {"data": 8}
    assert run.mesh.axis_types == (AxisType.Explicit,)
    assert sorted(run.mesh.device_ids.ravel()) == [d.id for d in devices]
    assert run.mesh_out == "Mesh('data': 8, axis_types=(Explicit,))\n"


def test_the_batch_is_split_over_data_eight_examples_per_device(run):
    x0, y0 = models.batches(steps=5, batch=64)[0]
    for placed, whole in [(run.x, x0), (run.y, y0)]:
        assert placed.sharding.spec == P("data")
        np.testing.assert_array_equal(placed, whole)
        for shard in placed.addressable_shards:
            assert shard.data.shape == (8, whole.shape[1])
            np.testing.assert_array_equal(shard.data, np.asarray(whole)[shard.index])
    assert run.batch_out.splitlines() == [
        "x: float32[64@data,32]   y: float32[64@data,8]",
        "one device holds x (8, 32)",
    ]


def test_an_uneven_batch_is_refused_with_what_to_change(run, capsys):
    train.uneven_batch(run.mesh)
    assert capsys.readouterr().out == (
        "ValueError: a batch of shape (60, 32) cannot be split evenly over the 8 "
        "devices of mesh axis 'data': make the batch size (dimension 0) a multiple "
        "of 8.\n"
    )


def test_shard_batch_needs_a_data_axis(mesh):
    with pytest.raises(ValueError, match=r"named 'data'.*has \('x', 'y'\)"):
        train.shard_batch(jnp.zeros((8, 2)), mesh)


def test_shard_batch_refuses_a_scalar(run):
    with pytest.raises(ValueError, match=r"shape \(\) cannot be split evenly"):
        train.shard_batch(jnp.float32(1.0), run.mesh)


def test_unplaced_parameters_make_the_backward_pass_ambiguous(run):
    lines = run.unplaced_out.splitlines()
    assert lines[0] == "up.kernel lives on {CpuDevice(id=0)}"
    assert lines[1].startswith(
        "ShardingTypeError: Contracting dimensions are sharded and it is ambiguous"
    )
    assert lines[-1].endswith(
        "Got lhs_contracting_spec=('data',) and rhs_contracting_spec=('data',)"
    )


def test_the_forward_pass_alone_works_with_unplaced_parameters(run):
    model = models.MLP(models.D_IN, models.D_HIDDEN, models.D_OUT, rngs=nnx.Rngs(0))
    loss = nnx.jit(models.loss_fn)(model, run.x, run.y)
    # The first training loss is the initial model's loss on this batch.
    np.testing.assert_allclose(loss, run.losses[0], rtol=1e-6)


def test_replication_puts_every_parameter_and_optimizer_leaf_on_all_devices(run):
    assert run.replicate_out.splitlines() == [
        "up.kernel: float32[32,128] P()",
        "copies: 8 of shape (32, 128)",
    ]
    # After training too: the step keeps every copy whole on every device.
    for leaf in jax.tree.leaves(nnx.state((run.model, run.optimizer))):
        assert leaf.sharding.mesh == run.mesh
        assert leaf.is_fully_replicated
        assert {s.data.shape for s in leaf.addressable_shards} == {leaf.shape}


def test_the_loss_goes_down(run):
    assert len(run.losses) == 5
    assert run.losses[-1] < 0.5 * run.losses[0]
    printed_losses = re.findall(r"\d\.\d+", run.train_out.splitlines()[0])
    np.testing.assert_allclose(
        [float(v) for v in printed_losses], run.losses, atol=5e-4
    )
    assert run.train_out.splitlines()[1] == "replicated after training: True"


def test_data_parallel_training_matches_one_device(run):
    # The tolerances the page states.
    np.testing.assert_allclose(run.losses, run.ref_losses, rtol=1e-5)
    for dp, ref in zip(params(run.model), params(run.ref_model), strict=True):
        np.testing.assert_allclose(dp, ref, rtol=0, atol=1e-5)


def test_the_printed_differences_are_within_the_stated_tolerance(run):
    lines = run.ref_out.splitlines()
    # A bound the code checks, not the float noise of one machine's last bits.
    assert lines[1:3] == [
        "losses within a relative 1e-05: True",
        "parameters within 1e-05:       True",
    ]


def test_the_plot_draws_the_losses_with_labels(run, monkeypatch):
    plt.close("all")
    monkeypatch.setattr(plt, "show", lambda: None)
    train.plot_losses(run.losses)
    try:
        (ax,) = plt.gcf().axes
        (line,) = ax.get_lines()
        np.testing.assert_array_equal(line.get_xdata(), [1, 2, 3, 4, 5])
        np.testing.assert_array_equal(line.get_ydata(), run.losses)
        assert ax.get_xlabel() == "step"
        assert ax.get_ylabel() == "loss (mean squared error)"
        assert ax.get_title() == "Data-parallel training on 8 devices"
    finally:
        plt.close("all")


def test_an_auto_data_axis_works_too(run):
    """The page's aside: on Auto axes jit places unplaced parameters by itself."""
    auto = jax.make_mesh((8,), ("data",), axis_types=(AxisType.Auto,))
    model = models.MLP(models.D_IN, models.D_HIDDEN, models.D_OUT, rngs=nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    x0, y0 = run.data[0]
    x, y = train.shard_batch(x0, auto), train.shard_batch(y0, auto)
    loss = nnx.jit(models.train_step)(model, optimizer, x, y)
    np.testing.assert_allclose(loss, run.losses[0], rtol=1e-6)
    assert model.up.kernel[...].is_fully_replicated
