import contextlib
import io
import re

import jax
import numpy as np
import pytest
from flax import nnx
from jax import P

from snippets.hlo import count_collectives
from snippets.models import Block
from snippets.training.tensor_parallel import heads


@pytest.fixture(scope="module")
def run(placed, model_mesh):
    specs = placed[0]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        by_heads, block = heads.place_block(specs, model_mesh)
        forward = heads.block_forward(block, model_mesh)
        backward = heads.block_backward(block, forward[0])
    return model_mesh, specs, by_heads, block, forward, backward, out.getvalue()


def all_reduce_shapes(compiled):
    return re.findall(r"= (f32\[[\d,]*\])\S* all-reduce\(", compiled.as_text())


def test_heads_dimension_is_split_in_qkv_and_out(run):
    by_heads, block = run[2], run[3]
    assert by_heads["attention.qkv"] == P(None, None, "model", None)
    assert by_heads["attention.out"] == P("model", None, None)
    assert by_heads["mlp.up.kernel"] == P(None, "model")
    assert by_heads["mlp.down.kernel"] == P("model", None)
    qkv, out = block.attention.qkv[...], block.attention.out[...]
    assert qkv.shape == (3, 32, 8, 4) and out.shape == (8, 4, 32)
    assert {s.data.shape for s in qkv.addressable_shards} == {(3, 32, 1, 4)}
    assert {s.data.shape for s in out.addressable_shards} == {(1, 4, 32)}
    # Each device holds one whole head, the same one in qkv and out.
    for s_qkv, s_out in zip(
        sorted(qkv.addressable_shards, key=lambda s: s.device.id),
        sorted(out.addressable_shards, key=lambda s: s.device.id),
        strict=True,
    ):
        assert (
            s_qkv.index[2]
            == s_out.index[0]
            == slice(s_qkv.device.id, s_qkv.device.id + 1)
        )
    rows = [re.split(r"\s{2,}", line) for line in run[6].splitlines()]
    assert [
        "attention.qkv",
        "(3, 32, 8, 4)",
        "P(None, None, 'model', None)",
        "(3, 32, 1, 4)",
    ] in rows
    assert [
        "attention.out",
        "(8, 4, 32)",
        "P('model', None, None)",
        "(1, 4, 32)",
    ] in rows


def test_block_forward_is_two_all_reduces_of_the_activations(run):
    tokens, compiled, out, expected = run[4]
    assert tokens.sharding.spec == P()
    assert count_collectives(compiled) == {"all-reduce": 2}
    assert all_reduce_shapes(compiled) == ["f32[8,16,32]"] * 2
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    assert "all-reduce          2" in run[6]
    assert "within 1e-05 of one device: True" in run[6].splitlines()


def test_block_backward_adds_one_all_reduce_and_matches_one_device(run):
    tokens = run[4][0]
    loss, compiled, grads = run[5]
    assert count_collectives(compiled) == {"all-reduce": 3}
    assert all_reduce_shapes(compiled) == ["f32[8,16,32]"] * 3
    assert grads.attention.qkv[...].sharding.spec in (
        P(None, None, "model"),
        P(None, None, "model", None),
    )
    unsharded = Block(d_model=32, num_heads=8, d_hidden=128, rngs=nnx.Rngs(0))
    expected = jax.jit(nnx.grad(loss))(unsharded, np.asarray(tokens))
    for a, b in zip(jax.tree.leaves(grads), jax.tree.leaves(expected), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    assert "gradient of attention.qkv: P(None, None, 'model')" in run[6]


class Stack(nnx.Module):
    def __init__(self, first, second):
        self.first, self.second = first, second

    def __call__(self, x):
        return self.second(self.first(x))


def test_a_second_block_adds_two_all_reduces_each_way(run):
    """The page: every block but the first needs its input's gradient summed too."""
    mesh, specs = run[0], run[1]
    with contextlib.redirect_stdout(io.StringIO()):
        stack = Stack(
            heads.place_block(specs, mesh)[1], heads.place_block(specs, mesh)[1]
        )
    tokens, loss = run[4][0], run[5][0]
    forward = jax.jit(lambda m, x: m(x)).lower(stack, tokens).compile()
    backward = jax.jit(nnx.grad(loss)).lower(stack, tokens).compile()
    assert count_collectives(forward) == {"all-reduce": 4}
    assert count_collectives(backward) == {"all-reduce": 4 + 3}
