import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import P
from jax.sharding import NamedSharding

from snippets.advanced.inference import decode, grouped, sequence
from snippets.hlo import count_collectives, read_collectives
from tests.advanced.inference.conftest import quietly
from tests.advanced.inference.test_grouped import numpy_gqa_greedy

PAGE = Path(__file__).resolve().parents[3] / "docs" / "advanced" / "inference-caches.md"


@pytest.fixture(scope="module")
def run(x_mesh, page_inputs):
    _, prompt = page_inputs
    return quietly(sequence.generate_by_sequence, x_mesh, prompt)


def numpy_attention(q, keys, values, filled):
    """One new token's grouped attention over the filled slots, float64."""
    q, keys, values = (np.asarray(a, np.float64) for a in (q, keys, values))
    b, heads, _, d = q.shape
    kv_heads = keys.shape[1]
    out = np.zeros((b, heads, d))
    for h in range(heads):
        kv = h // (heads // kv_heads)
        s = np.einsum("bd,bsd->bs", q[:, h, 0], keys[:, kv]) / np.sqrt(d)
        s[:, ~filled] = -np.inf
        p = np.exp(s - s.max(axis=-1, keepdims=True))
        out[:, h] = np.einsum(
            "bs,bsd->bd", p / p.sum(axis=-1, keepdims=True), values[:, kv]
        )
    return out


@pytest.mark.parametrize("kv_heads", [1, 2, 8])
@pytest.mark.parametrize("pos", [0, 3, 4, 17, 31])
def test_combined_partial_attention_is_the_softmax_over_every_slot(
    x_mesh, kv_heads, pos
):
    """Every device's slots, filled or empty (pos 0 and 3 leave 7 devices with none)."""
    rng = np.random.default_rng(pos)
    q = rng.standard_normal((2, 8, 1, 16), np.float32)
    keys, values = (
        rng.standard_normal((2, kv_heads, 32, 16), np.float32) for _ in "kv"
    )
    filled = np.arange(32) <= pos

    def local(q, keys, values):
        size = keys.shape[2]
        start = jax.lax.axis_index("x") * size
        mine = start + jnp.arange(size) <= pos
        return sequence.combine(*sequence.partial_attention(q, keys, values, mine), "x")

    split = P(None, None, "x")
    attend = jax.jit(
        jax.shard_map(local, mesh=x_mesh, in_specs=(P(), split, split), out_specs=P())
    )
    got = np.asarray(attend(q, keys, values)).reshape(2, 8, 16)
    assert np.isfinite(got).all()
    np.testing.assert_allclose(
        got, numpy_attention(q, keys, values, filled), rtol=1e-5, atol=1e-5
    )


def test_sequence_split_decoding_matches_one_device_and_numpy(run, page_inputs):
    (tokens, logits, want, want_logits, _), printed = run
    _, prompt = page_inputs
    np.testing.assert_array_equal(tokens, want)
    np.testing.assert_allclose(logits, want_logits, rtol=1e-5, atol=1e-5)
    ref_tokens, ref_logits = numpy_gqa_greedy(grouped.init_gqa(1), prompt, 8)
    np.testing.assert_array_equal(tokens, ref_tokens)
    np.testing.assert_allclose(logits, ref_logits, rtol=1e-5, atol=1e-5)
    lines = printed.splitlines()
    assert lines[0] == "cache (8, 1, 32, 16) device 0 holds (8, 1, 4, 16)"
    assert lines[1] == "same tokens as one device: True, logits within 1e-05: True"


def test_neither_batch_nor_key_value_heads_need_to_fill_the_mesh(x_mesh, page_inputs):
    """The page: the split cache needs only a length that fills the mesh."""
    _, prompt = page_inputs
    weights = grouped.init_gqa(2)
    first, step, args = sequence.by_sequence(x_mesh, 2, 2, decode.MAX_LEN)
    on = jax.tree.map(lambda a: a.sharding, args)
    tokens, logits = decode.generate(
        first,
        step,
        jax.device_put(weights, on[0]),
        jax.device_put(grouped.gqa_cache(2, 2), on[1]),
        jax.device_put(prompt[:2], on[2]),
        8,
    )
    want, want_logits = numpy_gqa_greedy(weights, prompt[:2], 8)
    np.testing.assert_array_equal(tokens, want)
    np.testing.assert_allclose(logits, want_logits, rtol=1e-5, atol=1e-5)
    said = (PAGE.parent / "inference.md").read_text()  # its "Which to choose"
    assert "needs neither a batch nor key-value heads that fill the mesh" in " ".join(
        said.split()
    )


def test_the_step_writes_only_the_device_that_holds_the_slot(x_mesh):
    _, step, args = sequence.by_sequence(x_mesh, 2, 1, decode.MAX_LEN)
    on = jax.tree.map(lambda a: a.sharding, args)
    weights = jax.device_put(grouped.init_gqa(1), on[0])
    cache = jax.device_put(grouped.gqa_cache(2, 1), on[1])
    token = jax.device_put(np.array([3, 5], np.int32), on[2])
    _, _, after = step(weights, cache, token, 13)
    k = np.asarray(after["k"])
    assert np.nonzero(np.abs(k).sum(axis=(0, 1, 3)))[0].tolist() == [13]
    for s in after["k"].addressable_shards:
        start = s.index[2].start
        assert bool(np.abs(np.asarray(s.data)).sum()) == (start <= 13 < start + 4)
        assert s.data.shape == (2, 1, 4, 16)
    assert all(a.is_deleted() for a in cache.values())  # donated


def test_the_compiled_step_has_two_all_reduces_whatever_the_length(run, x_mesh):
    compiled = run[0][4]
    found = [f"{c.kind} {c.result}" for c in read_collectives(compiled)]
    assert found == [
        "all-reduce f32[8,1,8,1,1]",
        "all-reduce (f32[8,1,8,1,16], f32[8,1,8,1,1])",
    ]
    assert run[1].splitlines()[2:] == found
    # a cache 4 times as long: the same collectives (batch, kv heads, group, 1, ...)
    _, step, args = sequence.by_sequence(x_mesh, 8, 1, 4 * decode.MAX_LEN)
    longer = [
        f"{c.kind} {c.result}" for c in read_collectives(step.lower(*args).compile())
    ]
    assert longer == found
    assert compiled.memory_analysis().alias_size_in_bytes == 2 * 8 * 4 * 16 * 4


def test_the_prefill_the_compiler_chose_gathers_the_whole_cache(x_mesh):
    """The page: compiled for the CPU backend, the prefill gathers the whole cache."""
    first, _, args = sequence.by_sequence(x_mesh, 8, 1, decode.MAX_LEN)
    prompt = jax.ShapeDtypeStruct((8, 8), jnp.int32, sharding=args[2].sharding)
    compiled = first.lower(args[0], args[1], prompt).compile()
    gathers = [c.result for c in read_collectives(compiled) if c.kind == "all-gather"]
    assert gathers == ["f32[8,1,32,16]", "f32[8,1,32,16]"]  # keys and values, whole


def test_a_cache_that_does_not_split_is_refused(x_mesh):
    step = jax.jit(sequence.sequence_decode_step(x_mesh))
    cache = grouped.gqa_cache(8, 1, length=36)
    with pytest.raises(
        ValueError, match="A cache of 36 slots does not split over the 8 devices"
    ):
        step(grouped.init_gqa(1), cache, jnp.zeros(8, jnp.int32), 3)
    # by_sequence's shardings say so too, in JAX's words, before the step runs
    _, step, args = sequence.by_sequence(x_mesh, 8, 1, 36)
    with pytest.raises(ValueError, match="dimension size is 36"):
        step.lower(*args)


def test_the_sequence_split_holds_an_eighth_of_the_cache(x_mesh):
    _, _, args = sequence.by_sequence(x_mesh, 8, 1, decode.MAX_LEN)
    k = args[1]["k"]
    assert k.sharding == NamedSharding(x_mesh, P(None, None, "x"))
    assert k.sharding.shard_shape(k.shape) == (8, 1, 4, 16)
    # the heads layout could not split this cache at all
    with pytest.raises(ValueError, match="splits at most 1 ways, not 8"):
        grouped.split_heads(x_mesh, 1)
    assert (
        count_collectives(
            jax.jit(lambda a: a * 2)
            .lower(jax.ShapeDtypeStruct((8,), jnp.float32))
            .compile()
        )
        == {}
    )


def test_the_prose_quotes_the_run():
    text = " ".join(PAGE.read_text().split())
    assert "Each device holds 4 of the 32 slots." in text and decode.MAX_LEN == 32
    assert "two all-reduces per step" in text
    assert "`head_dim + 1` numbers per query head and sequence" in text
    assert decode.HEAD_DIM + 1 == 17  # f32[8,1,8,1,16] and f32[8,1,8,1,1] together
    assert re.search(r"gathers the whole cache onto every device", text)
