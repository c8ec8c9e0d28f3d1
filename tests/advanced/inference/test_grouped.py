import math
import re
from pathlib import Path

import jax
import numpy as np
import pytest
from jax import P

from snippets.advanced.inference import decode, grouped
from snippets.hlo import count_collectives
from tests.advanced.inference.conftest import numpy_greedy, quietly

PAGE = Path(__file__).resolve().parents[3] / "docs" / "advanced" / "inference-caches.md"


def numpy_gqa_logits(weights: dict, tokens: np.ndarray) -> np.ndarray:
    """Causal grouped-query attention in float64, one query head at a time: query head h
    reads key-value head h // (HEADS // kv_heads)."""
    w = {name: np.asarray(a, np.float64) for name, a in weights.items()}
    heads, kv_heads = w["wq"].shape[1], w["wk"].shape[1]
    length = tokens.shape[1]
    x = w["embed"][tokens] + w["pos"][:length]
    out = np.zeros_like(x)
    future = np.triu(np.ones((length, length), bool), k=1)
    for h in range(heads):
        kv = h // (heads // kv_heads)
        q, k, v = x @ w["wq"][:, h], x @ w["wk"][:, kv], x @ w["wv"][:, kv]
        scores = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
        scores[:, future] = -np.inf
        p = np.exp(scores - scores.max(axis=-1, keepdims=True))
        p /= p.sum(axis=-1, keepdims=True)
        out += p @ v @ w["wo"][h]
    return (x + out) @ w["unembed"]


def numpy_gqa_greedy(weights: dict, prompt: np.ndarray, new_tokens: int):
    return numpy_greedy(weights, prompt, new_tokens, model=numpy_gqa_logits)


def test_only_the_key_value_weights_shrink():
    for kv_heads in (8, 2, 1):
        shapes = grouped.gqa_shapes(kv_heads)
        assert shapes["wk"] == shapes["wv"] == (128, kv_heads, 16)
        assert shapes["wq"] == (128, 8, 16) and shapes["wo"] == (8, 16, 128)
    assert grouped.gqa_shapes(8) == decode.weight_shapes()
    with pytest.raises(ValueError, match=r"8 query heads cannot share 3 key-value"):
        grouped.gqa_shapes(3)
    with pytest.raises(ValueError, match="use a divisor of 8"):
        grouped.init_gqa(0)


def test_as_many_key_value_heads_as_query_heads_is_the_pages_layer(
    devices, page_inputs, one_device
):
    """Same draws, same weights; the same tokens as the page's multi-head decoding."""
    weights, prompt = page_inputs
    mine = grouped.init_gqa(8)
    assert all(np.array_equal(mine[n], weights[n]) for n in weights)
    tokens, logits = decode.generate(
        jax.jit(grouped.gqa_prefill),
        jax.jit(grouped.gqa_decode_step),
        mine,
        grouped.gqa_cache(8, 8),
        prompt,
        8,
    )
    np.testing.assert_array_equal(tokens, one_device[0][2])
    np.testing.assert_allclose(logits, one_device[0][3], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kv_heads", [2, 1])
def test_grouped_decoding_matches_numpy(page_inputs, kv_heads):
    _, prompt = page_inputs
    weights = grouped.init_gqa(kv_heads)
    tokens, logits = decode.generate(
        jax.jit(grouped.gqa_prefill),
        jax.jit(grouped.gqa_decode_step),
        weights,
        grouped.gqa_cache(8, kv_heads),
        prompt,
        8,
    )
    want_tokens, want_logits = numpy_gqa_greedy(weights, prompt, 8)
    np.testing.assert_array_equal(tokens, want_tokens)
    np.testing.assert_allclose(logits, want_logits, rtol=1e-5, atol=1e-5)
    # the reference itself: with 8 key-value heads it is the page's multi-head one
    w8 = grouped.init_gqa(8)
    np.testing.assert_allclose(
        numpy_gqa_greedy(w8, prompt[:2], 2)[1], numpy_greedy(w8, prompt[:2], 2)[1]
    )


def test_the_head_cap_is_the_key_value_heads(x_mesh):
    assert grouped.split_heads(x_mesh, 8) == P(None, "x")
    for kv_heads in (4, 2, 1):
        with pytest.raises(ValueError, match=f"splits at most {kv_heads} ways, not 8"):
            grouped.split_heads(x_mesh, kv_heads)
    _, printed = quietly(grouped.head_cap, x_mesh)
    assert printed.startswith(
        "ValueError: The cache has 2 key-value heads, so its head axis splits at most "
        "2 ways, not 8."
    )


def test_head_mesh_puts_each_query_head_with_its_key_value_head(devices):
    for kv_heads, shape in ((8, (8, 1)), (2, (2, 4)), (1, (1, 8))):
        mesh = grouped.head_mesh(kv_heads)
        assert dict(mesh.shape) == dict(zip(("kv", "group"), shape, strict=True))
        group = 8 // kv_heads
        wq = jax.device_put(
            np.zeros((128, 8, 16)),
            jax.sharding.NamedSharding(mesh, grouped.HEAD_SPLIT["wq"]),
        )
        k = jax.device_put(
            np.zeros((8, kv_heads, 32, 16)),
            jax.sharding.NamedSharding(mesh, grouped.HEAD_SPLIT["cache"]),
        )
        kv_of = {s.device: s.index[1].indices(kv_heads) for s in k.addressable_shards}
        for shard in wq.addressable_shards:
            first, stop, _ = shard.index[1].indices(8)
            assert stop - first == 1  # one query head per device
            start, end, _ = kv_of[shard.device]
            assert end - start == 1 and start == first // group
    # "the key-value heads and the device count both divide 8, so the smaller divides
    # the larger": every such pair makes a mesh
    for kv_heads in (1, 2, 4, 8):
        for n in (1, 2, 4, 8):
            mesh = grouped.head_mesh(kv_heads, jax.devices()[:n])
            assert mesh.shape["kv"] == min(kv_heads, n)
    with pytest.raises(ValueError, match="8 query heads do not split over 3 devices"):
        grouped.head_mesh(1, jax.devices()[:3])
    with pytest.raises(ValueError, match="cannot share 5 key-value heads"):
        grouped.head_mesh(5)


def test_every_attention_leaves_one_key_value_head_per_device(devices):
    found, printed = quietly(grouped.per_device)
    one_head = 2 * 8 * 1 * 32 * 16 * 4  # k and v: batch 8, 1 head, MAX_LEN, head_dim
    rows = [re.split(r"\s{2,}", line.strip()) for line in printed.splitlines()]
    assert rows[0] == ["attention", "kv heads", "whole", "shard", "bytes"]
    for (name, (_, k)), row in zip(found.items(), rows[1:], strict=True):
        kv_heads = grouped.ATTENTION[name]
        whole = 2 * 8 * kv_heads * 32 * 16 * 4
        assert row == [
            name,
            str(kv_heads),
            f"{whole:,}",
            "(8, 1, 32, 16)",
            f"{one_head:,}",
        ]
        per_device = {2 * s.data.nbytes for s in k.addressable_shards}
        assert per_device == {one_head}
        # each block is held by 8 / kv_heads devices: copies, not more splitting
        blocks = {}
        for s in k.addressable_shards:
            blocks.setdefault(s.index[1].indices(kv_heads), []).append(s.device.id)
        assert len(blocks) == kv_heads
        assert {len(d) for d in blocks.values()} == {8 // kv_heads}
        assert math.prod(k.sharding.shard_shape(k.shape)) * 8 == one_head


def test_head_split_generation_matches_one_device(page_inputs):
    _, prompt = page_inputs
    found, printed = quietly(grouped.compare_head_split, prompt)
    for name, (tokens, logits, got, got_logits) in found.items():
        np.testing.assert_array_equal(got, tokens, err_msg=name)
        np.testing.assert_allclose(got_logits, logits, rtol=1e-5, atol=1e-5)
    assert printed.splitlines() == [
        f"{name}: same tokens as one device: True, logits within 1e-05: True"
        for name in grouped.ATTENTION
    ]


def test_the_head_split_step_needs_only_the_sum_over_heads(devices):
    """Each device's query heads find their key-value head locally: the grouped step's one
    collective is the page's all-reduce of the new tokens' activations."""
    for kv_heads in (2, 1):
        mesh = grouped.head_mesh(kv_heads)
        on = {
            n: jax.sharding.NamedSharding(mesh, grouped.HEAD_SPLIT.get(n, P()))
            for n in grouped.gqa_shapes(kv_heads)
        }
        kv = jax.sharding.NamedSharding(mesh, grouped.HEAD_SPLIT["cache"])
        whole = jax.sharding.NamedSharding(mesh, P())
        step = jax.jit(
            grouped.gqa_decode_step, in_shardings=(on, {"k": kv, "v": kv}, whole, whole)
        )
        compiled = step.lower(
            grouped.init_gqa(kv_heads),
            grouped.gqa_cache(8, kv_heads),
            np.zeros(8, np.int32),
            8,
        ).compile()
        assert count_collectives(compiled) == {"all-reduce": 1}


def test_the_prose_quotes_the_run():
    text = " ".join(PAGE.read_text().split())
    assert "a quarter of it for 2 and an eighth for 1" in text
    assert grouped.ATTENTION == {"multi-head": 8, "grouped-query": 2, "multi-query": 1}
    assert "device 0 holds the same bytes in all three" in text
    assert "With 2 key-value heads the cache splits 2 ways, not 8" in text
