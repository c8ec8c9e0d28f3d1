import contextlib
import io

import jax
import numpy as np
from flax import nnx

from snippets.training.sharding_parameters import optimizer_state, path_rules, train

from .test_path_rules import table_rows


def params(model):
    return jax.tree.leaves(nnx.state(model, nnx.Param))


def assert_matches_reference(losses, model, ref_losses, ref_model):
    """The tolerances the page states."""
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    for a, b in zip(params(model), params(ref_model), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=1e-5)


def test_the_annotated_model_trains_like_one_device(run):
    assert len(run.losses) == 5 and run.losses[-1] < 0.5 * run.losses[0]
    assert_matches_reference(run.losses, run.annotated, run.ref_losses, run.ref_model)


def test_training_keeps_every_parameter_where_it_was(run):
    for value, placed in zip(params(run.annotated), params(run.model), strict=True):
        assert value.sharding.is_equivalent_to(placed.sharding, value.ndim)
    assert table_rows(run.train_out) == [
        ["down/bias", "(8,)", "P(None,)", "(8,)"],
        ["down/kernel", "(128, 8)", "P('model',)", "(32, 8)"],
        ["up/bias", "(128,)", "P('model',)", "(32,)"],
        ["up/kernel", "(32, 128)", "P(None, 'model')", "(32, 32)"],
    ]
    first = run.train_out.splitlines()[0]
    assert first.startswith("losses: [")
    printed = [float(v) for v in first[9:-1].split(", ")]
    np.testing.assert_allclose(printed, run.losses, atol=5e-4)  # 3 decimals


def test_the_printed_differences_are_within_the_stated_tolerance(run):
    lines = run.compare_out.splitlines()
    # A bound the code checks, not the float noise of one machine's last bits.
    assert lines[1:3] == [
        "losses within a relative 1e-05: True",
        "parameters within 1e-05:       True",
    ]


def test_the_model_sharded_by_rules_trains_like_one_device_too(run):
    with contextlib.redirect_stdout(io.StringIO()):
        model = path_rules.sharded_model(run.mesh)
        optimizer = optimizer_state.rules_optimizer(model)
        losses = train.train(model, optimizer, run.mesh)
    assert_matches_reference(losses, model, run.ref_losses, run.ref_model)
    # Adam's count and the step counter started on one device; the step moved them.
    for counter in (optimizer.opt_state[0].count[...], optimizer.step[...]):
        assert counter.sharding.mesh == run.mesh
        assert int(counter) == 5
