import re

import jax
import numpy as np
import pytest
from jax import P
from jax.sharding import AxisType

from snippets.advanced.expert_parallel import layer


def test_one_explicit_axis_named_expert_over_all_eight_devices(expert_mesh, devices):
    assert dict(expert_mesh.shape) == {"expert": 8}
    assert expert_mesh.axis_types == (AxisType.Explicit,)
    assert sorted(expert_mesh.device_ids.ravel()) == [d.id for d in devices]


def test_each_device_holds_one_whole_expert_and_a_group_of_tokens(params, x, built):
    assert params["router"].sharding.spec == P()
    assert params["w_in"].sharding.spec == P("expert")
    assert params["w_out"].sharding.spec == P("expert")
    shards = {
        name: {s.data.shape for s in w.addressable_shards} for name, w in params.items()
    }
    assert shards == {
        "router": {(16, 8)},
        "w_in": {(1, 16, 32)},
        "w_out": {(1, 32, 16)},
    }
    # Device d holds expert d's weights, and tokens 32d to 32d + 31.
    for shard in params["w_in"].addressable_shards:
        d = shard.device.id
        assert shard.index[0] == slice(d, d + 1)
        np.testing.assert_array_equal(shard.data[0], np.asarray(params["w_in"])[d])
    assert x.sharding.spec == P("expert")
    assert {s.data.shape for s in x.addressable_shards} == {(32, 16)}
    table = [re.split(r"\s{2,}", line) for line in built[1].splitlines()]
    assert table == [
        ["router", "(16, 8)", "P()", "per device (16, 8)"],
        ["w_in", "(8, 16, 32)", "P('expert',)", "per device (1, 16, 32)"],
        ["w_out", "(8, 32, 16)", "P('expert',)", "per device (1, 32, 16)"],
        ["x", "(256, 16)", "P('expert',)", "per device (32, 16)"],
    ]


def test_init_scales_each_weight_by_its_fan_in():
    params = layer.init_moe(jax.random.key(0), 64, 128, experts=4)
    assert {k: v.shape for k, v in params.items()} == {
        "router": (64, 4),
        "w_in": (4, 64, 128),
        "w_out": (4, 128, 64),
    }
    np.testing.assert_allclose(np.std(params["w_in"]), 1 / 8, rtol=0.05)
    np.testing.assert_allclose(np.std(params["w_out"]), 1 / np.sqrt(128), rtol=0.05)
    with pytest.raises(ValueError, match="must be at least 1, not 16, 32 and 0"):
        layer.init_moe(jax.random.key(0), 16, 32, experts=0)


def test_placing_needs_an_expert_axis_that_divides_the_experts(line_mesh, expert_mesh):
    params = layer.init_moe(jax.random.key(0), 4, 4, experts=8)
    with pytest.raises(ValueError, match=r"The mesh has axes \('x',\): name one"):
        layer.place_moe(params, line_mesh)
    six = layer.init_moe(jax.random.key(0), 4, 4, experts=6)
    with pytest.raises(
        ValueError, match="6 experts do not split over the 8 devices of axis 'expert'"
    ):
        layer.place_moe(six, expert_mesh)


def softmax(logits):
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_top_1_routing_picks_the_most_probable_expert_and_its_probability(
    params, tokens, capsys
):
    expert, gate = layer.show_routes(params, tokens)
    probs = softmax(np.asarray(tokens[:8]) @ np.asarray(params["router"]))
    np.testing.assert_array_equal(expert, probs.argmax(axis=1))
    np.testing.assert_allclose(gate, probs.max(axis=1), rtol=1e-5)
    assert capsys.readouterr().out == (
        f"expert {np.asarray(expert)}\ngate   {probs.max(axis=1).round(2)}\n"
    )


def test_expert_mlp_runs_expert_e_on_tokens_e(params):
    rng = np.random.default_rng(0)
    stacked = rng.standard_normal((8, 3, 16)).astype(np.float32)
    w_in, w_out = np.asarray(params["w_in"]), np.asarray(params["w_out"])
    got = layer.expert_mlp(stacked, w_in, w_out)
    for e in range(8):
        expected = np.maximum(stacked[e] @ w_in[e], 0) @ w_out[e]
        np.testing.assert_allclose(got[e], expected, rtol=1e-5, atol=1e-6)
