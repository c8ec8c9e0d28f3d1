"""snippets.models: the model family of the training pages and its single-device reference."""

import jax
import numpy as np
import pytest
from flax import nnx

from snippets import models


def test_reference_training_lowers_the_loss():
    losses, model = models.train_reference(steps=5, batch=64)
    assert len(losses) == 5 and losses[-1] < 0.6 * losses[0]
    assert model.up.kernel.shape == (32, 128)
    assert model.down.kernel.shape == (128, 8)


def test_the_data_is_the_same_for_every_strategy():
    first, again = models.batches(2, 16, seed=3), models.batches(2, 16, seed=3)
    for (x1, y1), (x2, y2) in zip(first, again, strict=True):
        np.testing.assert_array_equal(x1, x2)
        np.testing.assert_array_equal(y1, y2)
    assert first[0][0].shape == (16, 32) and first[0][1].shape == (16, 8)


def test_batches_rejects_empty_sizes():
    with pytest.raises(ValueError, match="need steps >= 1 and batch >= 1, got 0 and 8"):
        models.batches(0, 8)


def test_block_keeps_the_shape_and_matches_its_parts():
    block = models.Block(32, 8, 64, rngs=nnx.Rngs(0))
    x = jax.random.normal(jax.random.key(1), (2, 4, 32))
    out = block(x)
    assert out.shape == (2, 4, 32)
    middle = x + block.attention(x)
    np.testing.assert_allclose(out, middle + block.mlp(middle), rtol=1e-6)


def test_attention_heads_must_divide_the_width():
    with pytest.raises(
        ValueError, match="d_model=30 must be a multiple of num_heads=8"
    ):
        models.Attention(30, 8, rngs=nnx.Rngs(0))
