import re
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from snippets.advanced.inference import decode
from tests.advanced.inference.conftest import numpy_logits, quietly

BATCH, CACHE_SHAPE = 8, (8, 8, 32, 16)  # (batch, heads, MAX_LEN, head_dim)


def test_weights_keep_the_heads_as_a_dimension(page_inputs):
    weights, prompt = page_inputs
    assert {name: a.shape for name, a in weights.items()} == {
        "embed": (64, 128),
        "pos": (32, 128),
        "wq": (128, 8, 16),
        "wk": (128, 8, 16),
        "wv": (128, 8, 16),
        "wo": (8, 16, 128),
        "unembed": (128, 64),
    }
    assert {a.dtype for a in weights.values()} == {np.dtype(np.float32)}
    assert all(a.devices() == {jax.devices()[0]} for a in weights.values())
    assert prompt.shape == (8, 8) and prompt.dtype == np.int32
    assert prompt.min() >= 0 and prompt.max() < decode.VOCAB
    with pytest.raises(
        ValueError, match=r"heads \(0\) and head_dim \(16\) must be >= 1"
    ):
        decode.init_weights(heads=0)


def test_the_cache_is_zeros_of_batch_heads_length_head_dim():
    cache = decode.empty_cache(BATCH)
    assert set(cache) == {"k", "v"}
    for a in cache.values():
        assert a.shape == CACHE_SHAPE and a.dtype == np.float32
        assert not np.asarray(a).any()
    assert decode.empty_cache(2, heads=4, head_dim=8)["k"].shape == (2, 4, 32, 8)
    with pytest.raises(ValueError, match=r"batch \(0\) must be >= 1"):
        decode.empty_cache(0)


def test_every_query_head_has_its_own_keys_and_values(page_inputs):
    """Multi-head attention, as the page says: the cache's heads are the query heads, so the
    cap on the heads layout is all 8 of them (grouped-query attention would cap it at its
    key-value heads)."""
    weights, _ = page_inputs
    query_heads = weights["wq"].shape[1]
    assert weights["wk"].shape[1] == weights["wv"].shape[1] == query_heads == 8
    assert decode.empty_cache(BATCH)["k"].shape[1] == query_heads


def test_forward_matches_numpy_head_by_head(page_inputs):
    weights, prompt = page_inputs
    logits, (k, v) = jax.jit(decode.forward)(weights, prompt)
    np.testing.assert_allclose(
        logits, numpy_logits(weights, prompt), rtol=1e-5, atol=1e-5
    )
    assert k.shape == v.shape == (8, 8, 8, 16)  # (batch, heads, T, head_dim)


def test_prefill_writes_the_prompt_and_nothing_after_it(page_inputs):
    weights, prompt = page_inputs
    token, last, cache = jax.jit(decode.prefill)(
        weights, decode.empty_cache(BATCH), prompt
    )
    _, (k, v) = jax.jit(decode.forward)(weights, prompt)
    np.testing.assert_array_equal(cache["k"][:, :, :8], k)
    np.testing.assert_array_equal(cache["v"][:, :, :8], v)
    assert not np.asarray(cache["k"][:, :, 8:]).any()
    np.testing.assert_allclose(
        last, numpy_logits(weights, prompt)[:, -1], rtol=1e-5, atol=1e-5
    )
    np.testing.assert_array_equal(token, np.argmax(last, axis=-1))


def test_a_decode_step_writes_one_position_and_predicts_like_a_full_pass(
    page_inputs,
):
    weights, prompt = page_inputs
    token, _, cache = jax.jit(decode.prefill)(
        weights, decode.empty_cache(BATCH), prompt
    )
    before = {n: np.asarray(a) for n, a in cache.items()}
    nxt, logits, after = jax.jit(decode.decode_step)(weights, cache, token, 8)
    sequence = np.concatenate([prompt, np.asarray(token)[:, None]], axis=1)
    _, (k, v) = jax.jit(decode.forward)(weights, sequence)
    for name, full in (("k", k), ("v", v)):
        changed = np.nonzero((np.asarray(after[name]) != before[name]).any((0, 1, 3)))
        assert changed[0].tolist() == [8]  # only position 8 was written
        np.testing.assert_allclose(
            after[name][:, :, 8], full[:, :, 8], rtol=1e-5, atol=1e-5
        )
    np.testing.assert_allclose(
        logits, numpy_logits(weights, sequence)[:, -1], rtol=1e-5, atol=1e-5
    )
    np.testing.assert_array_equal(nxt, np.argmax(logits, axis=-1))


def test_a_position_past_the_end_is_clamped_onto_the_last_slot(page_inputs):
    """The page: XLA clamps the start index, so pos = MAX_LEN writes position 31."""
    weights, _ = page_inputs
    token = jnp.zeros(1, jnp.int32)
    _, _, cache = jax.jit(decode.decode_step)(
        weights, decode.empty_cache(1), token, decode.MAX_LEN
    )
    written = np.nonzero(np.abs(np.asarray(cache["k"])).sum(axis=(0, 1, 3)))[0]
    assert written.tolist() == [decode.MAX_LEN - 1]


def test_cached_greedy_decoding_equals_recomputing_in_numpy(one_device, reference):
    (_, _, tokens, logits), printed = one_device
    assert tokens.shape == (8, 8) and logits.shape == (8, 8, 64)
    np.testing.assert_array_equal(tokens, reference[0])
    np.testing.assert_allclose(logits, reference[1], rtol=1e-5, atol=1e-5)
    assert printed == f"{tokens}\n"


def test_the_page_compares_with_its_own_recompute(page_inputs, one_device):
    weights, prompt = page_inputs
    tokens, logits = one_device[0][2:]
    again, printed = quietly(
        decode.check_against_recompute, weights, prompt, tokens, logits
    )
    np.testing.assert_allclose(again, logits, rtol=1e-5, atol=1e-5)
    lines = printed.splitlines()
    assert lines[0] == "same tokens: True"
    assert lines[1] == "logits within 0.0001: True"


def test_generate_refuses_more_tokens_than_the_cache_holds(page_inputs, one_device):
    weights, prompt = page_inputs
    prefill_one, step_one = one_device[0][:2]
    with pytest.raises(ValueError, match="write 33 positions; the cache has 32"):
        decode.generate(
            prefill_one, step_one, weights, decode.empty_cache(8), prompt, 26
        )
    with pytest.raises(ValueError, match="Ask for at least 1"):
        decode.generate(
            prefill_one, step_one, weights, decode.empty_cache(8), prompt, 0
        )
    # 25 new tokens write positions 0..31, the whole cache.
    tokens, _ = decode.generate(
        prefill_one, step_one, weights, decode.empty_cache(8), prompt, 25
    )
    assert tokens.shape == (8, 25)


@pytest.fixture(scope="module")
def donated(page_inputs, one_device):
    weights, prompt = page_inputs
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result, printed = quietly(decode.donation, one_device[0][0], weights, prompt)
    return result, printed, caught


def test_donation_aliases_the_cache_and_deletes_the_input(donated):
    (kept, (compiled, old_cache, new_cache)), printed, caught = donated
    cache_bytes = 2 * np.prod(CACHE_SHAPE) * 4
    assert cache_bytes == 262144
    assert compiled.memory_analysis().alias_size_in_bytes == cache_bytes
    assert kept[0].memory_analysis().alias_size_in_bytes == 0
    # The compiled HLO says the same: outputs alias parameters only when donated.
    assert "may-alias" in compiled.as_text().splitlines()[0]
    assert "input_output_alias" not in kept[0].as_text().splitlines()[0]
    assert all(a.is_deleted() for a in old_cache.values())
    assert not any(a.is_deleted() for a in kept[1].values())
    assert not any(a.is_deleted() for a in new_cache.values())
    # Donating changes where the result lives, not what it is.
    for name in ("k", "v"):
        np.testing.assert_array_equal(new_cache[name], kept[2][name])
    assert not [w for w in caught if "donated" in str(w.message)]
    rows = [re.split(r"\s{2,}", line) for line in printed.splitlines()]
    assert rows == [
        ["cache: 262,144 bytes"],
        ["donate", "aliased bytes", "old cache deleted", "new in old buffer"],
        ["False", "0", "False", "False"],
        ["True", "262,144", "True", "True"],
    ]


def test_a_donated_array_cannot_be_used_again(donated):
    old_cache = donated[0][1][1]
    _, printed = quietly(decode.use_after_donation, old_cache)
    assert (
        printed
        == "RuntimeError: Array has been deleted with shape=float32[8,8,32,16].\n"
    )


def test_one_program_serves_every_position_but_not_every_length(page_inputs):
    """The page: a traced pos is traced once; a growing shape is traced each time."""
    weights, prompt = page_inputs
    traced = []

    def counted(function):
        def run(*args):
            traced.append(function.__name__)
            return function(*args)

        return jax.jit(run)

    step = counted(decode.decode_step)
    cache, token = decode.empty_cache(BATCH), jnp.zeros(BATCH, jnp.int32)
    for pos in range(8, 16):
        token, _, cache = step(weights, cache, token, pos)
    forward = counted(decode.forward)
    for length in (8, 9, 10):
        forward(weights, np.tile(prompt[:, :1], (1, length)))
    assert traced == ["decode_step"] + ["forward"] * 3
