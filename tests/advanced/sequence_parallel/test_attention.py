import numpy as np
import pytest

from snippets.advanced.sequence_parallel import attention
from tests.advanced.sequence_parallel.conftest import reference

RNG = np.random.default_rng(3)


def random(*shape, scale=1.0):
    return (scale * RNG.standard_normal(shape)).astype(np.float32)


def test_the_data_is_one_head_of_64_positions(qkv):
    (q, k, v), printed = qkv
    assert q.shape == k.shape == v.shape == (64, 16)
    assert printed == "q, k, v: (64, 16)  scores: (64, 64)  out: (64, 16)\n"


@pytest.mark.parametrize("causal", [False, True])
def test_attention_is_the_softmax_formula(qkv, causal):
    (q, k, v), _ = qkv
    np.testing.assert_allclose(
        attention.attention(q, k, v, causal), reference(q, k, v, causal), atol=1e-6
    )


def test_causal_attention_lets_position_i_see_keys_up_to_i():
    q, k, v = random(6, 4), random(6, 4), random(6, 3)
    out = attention.attention(q, k, v, causal=True)
    np.testing.assert_allclose(out[0], v[0], rtol=1e-6)  # the first query sees one key
    changed = v.copy()
    changed[5] += 100  # only the last query sees the last value
    moved = attention.attention(q, k, changed, causal=True)
    np.testing.assert_allclose(moved[:5], out[:5], rtol=1e-6)
    assert not np.allclose(moved[5], out[5])


def test_attention_says_what_shapes_it_needs():
    with pytest.raises(ValueError, match=r"must be 2-D .* Give one head at a time"):
        attention.attention(np.zeros((2, 4, 8)), np.zeros((4, 8)), np.zeros((4, 8)))
    with pytest.raises(ValueError, match="the same feature size"):
        attention.attention(np.zeros((4, 8)), np.zeros((4, 6)), np.zeros((4, 8)))
    with pytest.raises(ValueError, match="k and v the same positions"):
        attention.attention(np.zeros((4, 8)), np.zeros((4, 8)), np.zeros((5, 8)))


def test_the_scores_grow_with_the_square_of_the_positions(capsys):
    attention.scores_grow()
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3
    for line, n in zip(lines, (1024, 8192, 32768), strict=True):
        assert f"scores ({n}, {n})," in line
        assert line.endswith(f"{n * n * 4 // 2**20:,} MiB")


@pytest.mark.parametrize(
    ("block", "causal"), [(8, False), (8, True), (4, True), (64, True)]
)
def test_streaming_attention_equals_attention(qkv, block, causal):
    (q, k, v), _ = qkv
    got = attention.streaming_attention(q, k, v, block, causal)
    np.testing.assert_allclose(got, reference(q, k, v, causal), atol=1e-6)


def test_the_page_shows_the_streaming_result_equal_to_attention(qkv, capsys):
    attention.streaming_matches(*qkv[0])
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "causal=False  within 1e-05 of attention: True",
        "causal=True   within 1e-05 of attention: True",
    ]


def test_streaming_attention_refuses_a_block_that_does_not_divide(qkv):
    (q, k, v), _ = qkv
    with pytest.raises(ValueError, match="block=5 must divide the 64 positions"):
        attention.streaming_attention(q, k, v, 5)
    with pytest.raises(ValueError, match="block=0 must divide"):
        attention.streaming_attention(q, k, v, 0)


def test_the_running_max_keeps_huge_scores_finite():
    """Scores of a few hundred: exp overflows float32, the online softmax does not."""
    q, k, v = random(16, 8, scale=12), random(16, 8, scale=12), random(16, 8)
    scores = q @ k.T / np.float32(np.sqrt(8))
    assert np.abs(scores).max() > 200
    with np.errstate(over="ignore"):
        assert np.isinf(np.exp(scores)).any()  # a plain sum of exponentials overflows
    got = attention.streaming_attention(q, k, v, 4, causal=True)
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, reference(q, k, v, True), atol=1e-5)


def test_a_first_block_masked_entirely_gives_nan():
    """The trap the page names: running max -inf, and exp(-inf - (-inf))."""
    q, k, v = random(4, 8), random(4, 8), random(4, 8)
    hidden = np.zeros((4, 4), bool)
    carry = attention.accumulate(attention.start(q, v), q, k, v, hidden)
    assert np.isneginf(carry[0]).all()
    assert np.isnan(carry[1]).all() and np.isnan(carry[2]).all()
    # Seen after a block with a visible key, the same hidden block changes nothing.
    first = attention.accumulate(attention.start(q, v), q, k, v)
    after = attention.accumulate(first, q, k, v, hidden)
    for a, b in zip(first, after, strict=True):
        np.testing.assert_array_equal(a, b)


def test_blocks_with_different_maxima_add_up():
    """The second block raises every running max: the first block's sums are rescaled."""
    q, k, v = random(4, 8), random(8, 8), random(8, 8)
    k[4:] *= 5  # the second block has larger scores
    first = attention.accumulate(attention.start(q, v), q, k[:4], v[:4])
    carry = attention.accumulate(first, q, k[4:], v[4:])
    assert (carry[0] > first[0]).all()
    np.testing.assert_allclose(attention.finish(carry), reference(q, k, v), atol=1e-6)
