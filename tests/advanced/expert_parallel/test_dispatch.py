import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import P
from jax.sharding import AxisType, NamedSharding

from snippets.advanced.expert_parallel import capacity as cap
from snippets.advanced.expert_parallel import dispatch, layer
from snippets.hlo import count_collectives


def routed(tokens, params):
    """Each token's expert and gate, in NumPy."""
    logits = np.asarray(tokens) @ np.asarray(params["router"])
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    choice = probs.argmax(axis=1)
    return choice, probs[np.arange(len(choice)), choice]


def received_by_loop(tokens, params, devices, size):
    """What each expert should receive: (experts, devices * size, d), token by token."""
    tokens = np.asarray(tokens)
    choice, _ = routed(tokens, params)
    out = np.zeros((8, devices * size, tokens.shape[1]), np.float32)
    for j, group in enumerate(np.split(np.arange(len(tokens)), devices)):
        taken = np.zeros(8, int)
        for t in group:
            e = choice[t]
            if taken[e] < size:
                out[e, j * size + taken[e]] = tokens[t]
            taken[e] += 1
    return out


def test_each_device_sends_its_buffer_and_gets_its_experts_slots(
    x, tokens, params, expert_mesh, capsys
):
    received = dispatch.dispatched(x, params, expert_mesh)
    out = capsys.readouterr().out.splitlines()
    assert out[:3] == [
        "sent     float32[8,4,16]{V:expert}",
        "received float32[1,32,16]{V:expert}",
        "all devices: (8, 32, 16) P('expert', None, None)",
    ]
    assert {s.data.shape for s in received.addressable_shards} == {(1, 32, 16)}
    for shard in received.addressable_shards:  # device e holds expert e's slots
        assert shard.index[0] == slice(shard.device.id, shard.device.id + 1)
    expected = received_by_loop(tokens, params, 8, 4)
    np.testing.assert_array_equal(received, expected)
    # The table: expert e's tokens from device j; a row adds up to the expert's kept.
    table = np.array([[int(n) for n in line.strip(" []").split()] for line in out[4:]])
    np.testing.assert_array_equal(table, expected.any(-1).reshape(8, 8, 4).sum(-1))
    assert table.max() <= 4
    _, _, kept = cap.expert_load(x, params["router"], 8, 1.0)
    np.testing.assert_array_equal(table.sum(axis=1), kept)


def test_the_figure_counts_each_devices_tokens_for_each_expert(
    x, tokens, params, expert_mesh, capsys
):
    """The page's figure (docs_build.figures.dispatch): its arrows carry the tokens each
    device's group routed to each expert, capped at the capacity, routed here in NumPy."""
    from docs_build import figures, render

    received = dispatch.dispatched(x, params, expert_mesh)
    capsys.readouterr()
    choice, _ = routed(tokens, params)
    expected = np.zeros((8, 8), int)  # [expert, device]
    for j, group in enumerate(np.split(choice, 8)):
        for e in range(8):
            expected[e, j] = min(int((group == e).sum()), 4)
    devices, counts = figures.dispatch_counts(received)
    assert devices == list(range(8))
    np.testing.assert_array_equal(np.array(counts), expected)
    figure = figures.dispatch(received, "t")
    for j in range(8):
        sends = ", ".join(f"{expected[e, j]} to expert {e}" for e in range(8))
        assert f"device {j} sends {sends}" in figure.text
    # one arrow per nonzero count, as wide as it, in the sender's colour
    drawn = {
        (int(j), int(e)): (colour, float(width))
        for colour, width, j, e, _ in re.findall(
            r'<path stroke="([^"]+)" stroke-width="([\d.]+)" d="[^"]+">'
            r"<title>device (\d) to expert (\d): (\d+)</title>",
            figure.svg,
        )
    }
    assert set(drawn) == {(j, e) for e in range(8) for j in range(8) if expected[e, j]}
    for (j, e), (colour, width) in drawn.items():
        assert colour == render.DEVICE_COLOURS[j]
        assert width == pytest.approx(0.6 * expected[e, j])


def dense_moe(params, tokens, keep):
    """The layer on one device in jax.numpy, every expert on every token, then picked
    (keep: which tokens have a slot)."""
    probs = jax.nn.softmax(tokens @ params["router"], axis=-1)
    choice = jnp.argmax(probs, axis=-1)
    hidden = jax.nn.relu(jnp.einsum("td,edh->teh", tokens, params["w_in"]))
    every = jnp.einsum("teh,ehd->ted", hidden, params["w_out"])
    mine = jnp.take_along_axis(every, choice[:, None, None], axis=1)[:, 0]
    gate = jnp.take_along_axis(probs, choice[:, None], axis=1)
    return mine * gate * keep[:, None]


def kept_tokens(tokens, params, groups, size):
    choice, _ = routed(tokens, params)
    keep = np.zeros(len(choice), bool)
    for group in np.split(np.arange(len(choice)), groups):
        taken = np.zeros(8, int)
        for t in group:
            keep[t] = taken[choice[t]] < size
            taken[choice[t]] += 1
    return keep


def one_device(params):
    return {k: np.asarray(v) for k, v in params.items()}


def test_the_layer_equals_the_one_device_reference_at_both_factors(
    x, tokens, params, expert_mesh, capsys
):
    last = dispatch.compare(x, tokens, params, expert_mesh)
    out = capsys.readouterr().out.splitlines()
    for factor, line in zip((1.0, 2.0), out, strict=False):
        y = dispatch.moe_layer(expert_mesh, factor)(x, params)
        size = cap.capacity(32, 8, factor)
        assert y.sharding.spec == P("expert", None)
        assert {s.data.shape for s in y.addressable_shards} == {(32, 16)}
        expected = cap.reference_moe(tokens, params, groups=8, capacity=size)
        np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)
        keep = kept_tokens(tokens, params, 8, size)
        np.testing.assert_allclose(
            y,
            dense_moe(one_device(params), np.asarray(tokens), keep),
            rtol=1e-5,
            atol=1e-6,
        )
        # The zeros are exactly the dropped tokens.
        np.testing.assert_array_equal(np.asarray(y).any(axis=1), keep)
        assert line == (
            f"factor {factor}: {(~keep).sum()} tokens out as zeros, within 1e-05: True"
        )
    np.testing.assert_array_equal(last, y)  # the page prints the second one
    assert out[2] == "(256, 16) P('expert', None)"


def test_with_room_for_every_token_it_is_the_moe_without_capacity(
    x, tokens, params, expert_mesh, capsys
):
    y, expected = dispatch.nothing_dropped(x, tokens, params, expert_mesh)
    everyone = np.ones(len(tokens), bool)
    plain = dense_moe(one_device(params), np.asarray(tokens), everyone)
    np.testing.assert_allclose(y, plain, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(expected, plain, rtol=1e-5, atol=1e-6)
    assert np.asarray(y).any(axis=1).all()
    assert capsys.readouterr().out == "capacity 32, within 1e-05: True\n"


def test_the_compiled_layer_has_two_all_to_alls_and_nothing_else(
    x, params, expert_mesh, capsys
):
    compiled = dispatch.compiled_layer(x, params, expert_mesh)
    assert count_collectives(compiled) == {"all-to-all": 2}
    assert capsys.readouterr().out == f"{'all-to-all':<20}2\n"
    for factor in (2.0, 8.0):  # any capacity: the same two
        other = dispatch.moe_layer(expert_mesh, factor).lower(x, params).compile()
        assert count_collectives(other) == {"all-to-all": 2}


def test_the_gradient_adds_one_all_to_all_and_the_routers_all_reduce(
    x, tokens, params, expert_mesh, capsys
):
    compiled = dispatch.compiled_gradient(x, params, expert_mesh)
    assert count_collectives(compiled) == {"all-reduce": 1, "all-to-all": 3}
    hlo = compiled.as_text()
    assert "f32[16,8]" in next(
        line for line in hlo.splitlines() if " all-reduce(" in line
    )
    assert capsys.readouterr().out == f"{'all-reduce':<20}1\n{'all-to-all':<20}3\n"
    # "A fourth all-to-all would carry the gradient on to the tokens."
    layer_ = dispatch.moe_layer(expert_mesh, 1.0)
    both = jax.jit(jax.grad(lambda p, x: jnp.mean(layer_(x, p) ** 2), argnums=(0, 1)))
    assert count_collectives(both.lower(params, x).compile())["all-to-all"] == 4
    # The gradients are those of the same layer on one device.
    grads = compiled(params, x)
    keep = kept_tokens(tokens, params, 8, 4)
    expected = jax.grad(
        lambda p: jnp.mean(dense_moe(p, np.asarray(tokens), keep) ** 2)
    )(one_device(params))
    for name in ("router", "w_in", "w_out"):
        where = NamedSharding(expert_mesh, layer.SPECS[name])
        assert grads[name].sharding.is_equivalent_to(where, grads[name].ndim)
        np.testing.assert_allclose(grads[name], expected[name], rtol=1e-4, atol=1e-6)


def test_two_experts_per_device_on_four_devices(tokens):
    """'several if each device held several experts, and the code is the same'."""
    four = jax.make_mesh(
        (4,), ("expert",), axis_types=(AxisType.Explicit,), devices=jax.devices()[:4]
    )
    params = layer.place_moe(layer.init_moe(jax.random.key(0), 16, 32, experts=8), four)
    assert {s.data.shape for s in params["w_in"].addressable_shards} == {(2, 16, 32)}
    x4 = jax.device_put(tokens, NamedSharding(four, P("expert")))
    y = dispatch.moe_layer(four, 1.0)(x4, params)
    expected = cap.reference_moe(
        tokens, params, groups=4, capacity=cap.capacity(64, 8, 1.0)
    )
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)


def test_the_layer_says_what_to_change(line_mesh, expert_mesh):
    with pytest.raises(ValueError, match=r"The mesh has axes \('x',\): name one"):
        dispatch.moe_layer(line_mesh, 1.0)
    with pytest.raises(ValueError, match="must be positive, not -1"):
        dispatch.moe_layer(expert_mesh, -1)
