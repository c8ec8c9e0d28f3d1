import re

import jax
import numpy as np
import pytest
from flax import nnx
from jax import P
from jax.sharding import AxisType

from snippets.models import D_HIDDEN, D_IN, D_OUT, MLP
from snippets.training.fsdp import placement


def test_one_auto_axis_named_data(data_mesh):
    assert dict(data_mesh.shape) == {"data": 8}
    assert data_mesh.axis_types == (AxisType.Auto,)


def test_every_parameter_splits_its_largest_divisible_dimension(placed):
    (specs, model, _), out = placed
    assert specs == {
        "down.bias": P("data"),
        "down.kernel": P("data"),
        "up.bias": P("data"),
        "up.kernel": P(None, "data"),
    }
    shards = {
        name: {s.data.shape for s in array.addressable_shards}
        for name, array in [
            ("up.kernel", model.up.kernel[...]),
            ("up.bias", model.up.bias[...]),
            ("down.kernel", model.down.kernel[...]),
            ("down.bias", model.down.bias[...]),
        ]
    }
    assert shards == {
        "up.kernel": {(32, 16)},
        "up.bias": {(16,)},
        "down.kernel": {(16, 8)},
        "down.bias": {(1,)},
    }
    fresh = MLP(D_IN, D_HIDDEN, D_OUT, rngs=nnx.Rngs(0))
    for a, b in zip(
        jax.tree.leaves(nnx.state(model, nnx.Param)),
        jax.tree.leaves(nnx.state(fresh, nnx.Param)),
        strict=True,
    ):
        np.testing.assert_array_equal(a, b)
    table = [re.split(r"\s{2,}", line) for line in out.splitlines()]
    assert table[-1] == ["up.kernel", "(32, 128)", "P(None, 'data')", "(32, 16)"]
    assert table[1] == ["down.bias", "(8,)", "P('data',)", "(1,)"]


@pytest.mark.parametrize(
    ("shape", "spec"),
    [
        ((32, 128), P(None, "data")),
        ((128, 32), P("data")),
        ((24, 16), P("data")),  # both divide: the larger one
        ((12, 16), P(None, "data")),  # only the smaller one divides
        ((6,), P()),  # nothing divides: kept whole
        ((3, 5), P()),
    ],
)
def test_the_rule_on_other_shapes(data_mesh, shape, spec):
    class Holder(nnx.Module):
        def __init__(self):
            self.w = nnx.Param(jax.numpy.zeros(shape))

    holder = Holder()
    assert placement.shard_fsdp(holder, data_mesh) == {"w": spec}
    assert holder.w[...].sharding.spec == spec


def test_adam_moments_follow_the_parameters(placed, capsys):
    optimizer = placed[0][2]
    adam = optimizer.opt_state[0]
    for moment in (adam.mu, adam.nu):
        assert moment["up"]["kernel"][...].sharding.spec == P(None, "data")
        assert moment["down"]["bias"][...].sharding.spec == P("data")
        assert {
            s.data.shape for s in moment["down"]["kernel"][...].addressable_shards
        } == {(16, 8)}
    placement.adam_state(optimizer)
    assert [line.split() for line in capsys.readouterr().out.splitlines()] == [
        ["mu", "up.kernel", "P(None,", "'data')", "(32,", "16)"],
        ["mu", "down.kernel", "P('data',)", "(16,", "8)"],
        ["nu", "up.kernel", "P(None,", "'data')", "(32,", "16)"],
        ["nu", "down.kernel", "P('data',)", "(16,", "8)"],
    ]
