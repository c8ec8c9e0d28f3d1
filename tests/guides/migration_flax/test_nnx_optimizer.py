import warnings

import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from snippets.guides.migration_flax import nnx_optimizer


@pytest.fixture
def parts(devices):
    return nnx_optimizer.tiny_model()


def test_optimizer_without_wrt_is_a_type_error(parts, capsys):
    model, tx, *_ = parts
    nnx_optimizer.old_optimizer(model, tx)
    assert capsys.readouterr().out == (
        "TypeError: Missing required argument `wrt`. As of Flax 0.11.0 the `wrt` "
        "argument is required, if you want to keep the previous use "
        "nnx.ModelAndOptimizer instead of nnx.Optimizer.\n"
    )
    with pytest.raises(TypeError, match=r"As of Flax 0\.11\.0 the `wrt` argument"):
        nnx.Optimizer(model, tx)


def test_optimizer_with_wrt_starts_at_step_zero_without_the_model(parts, capsys):
    model, tx, *_ = parts
    optimizer = nnx_optimizer.new_optimizer(model, tx)
    assert int(optimizer.step[...]) == 0
    assert optimizer.wrt is nnx.Param
    assert not hasattr(optimizer, "model")
    assert capsys.readouterr().out == "step: 0  optimizes: Param\n"


def test_update_with_grads_only_is_a_type_error(parts, capsys):
    model, tx, inputs, targets, loss_fn = parts
    optimizer = nnx.Optimizer(model, tx, wrt=nnx.Param)
    kernel = np.array(model.kernel[...])
    grads = nnx_optimizer.old_update(model, optimizer, loss_fn, inputs, targets)
    assert grads.kernel[...].shape == (2, 1) and grads.bias[...].shape == (1,)
    np.testing.assert_array_equal(model.kernel[...], kernel)  # nothing changed
    assert capsys.readouterr().out.startswith(
        "TypeError: Missing required argument `grads`. As of Flax 0.11.0 update "
        "requires both (model, grads) arguments to be passed."
    )
    with pytest.raises(TypeError, match=r"As of Flax 0\.11\.0 update requires both"):
        optimizer.update(grads)


def test_update_with_model_and_grads_takes_one_sgd_step(parts, capsys):
    model, tx, inputs, targets, loss_fn = parts
    optimizer = nnx.Optimizer(model, tx, wrt=nnx.Param)
    grads = nnx.grad(loss_fn)(model, inputs, targets)
    kernel, bias = np.array(model.kernel[...]), np.array(model.bias[...])
    before, after = nnx_optimizer.new_update(
        model, optimizer, loss_fn, inputs, targets, grads
    )
    np.testing.assert_allclose(model.kernel[...], kernel - 0.1 * grads.kernel[...])
    np.testing.assert_allclose(model.bias[...], bias - 0.1 * grads.bias[...])
    assert after < before
    assert int(optimizer.step[...]) == 1
    assert capsys.readouterr().out.endswith(f"{after:.4f} after step 1\n")


def test_model_and_optimizer_keeps_the_old_calling_convention_silently(parts):
    model, tx, inputs, targets, loss_fn = parts
    grads = nnx.grad(loss_fn)(model, inputs, targets)
    kernel = np.array(model.kernel[...])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        old_style = nnx.ModelAndOptimizer(model, tx)
        old_style.update(grads)
    np.testing.assert_allclose(model.kernel[...], kernel - 0.1 * grads.kernel[...])
    assert "deprecated" in nnx.ModelAndOptimizer.__doc__


def test_nnx_grad_differentiates_params_only_by_default():
    class Scaled(nnx.Module):
        def __init__(self):
            self.weight = nnx.Param(jnp.ones(2))
            self.stat = nnx.BatchStat(jnp.ones(2))

        def __call__(self):
            return (self.weight[...] * self.stat[...]).sum()

    grads = nnx.grad(lambda m: m())(Scaled())
    assert "weight" in grads and "stat" not in grads
