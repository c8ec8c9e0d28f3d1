from pathlib import Path

import numpy as np
import pytest

from snippets.advanced.expert_parallel import capacity as cap

PAGE = Path(__file__).resolve().parents[3] / "docs" / "advanced" / "expert-parallel.md"


def prose() -> str:
    return " ".join(PAGE.read_text(encoding="utf-8").split())


def test_capacity_is_the_ceiling_of_the_fair_share_times_the_factor():
    assert cap.capacity(32, 8, 1.0) == 4
    assert cap.capacity(32, 8, 2.0) == 8
    assert cap.capacity(32, 8, 1.25) == 5  # 5.0 exactly
    assert cap.capacity(30, 8, 1.0) == 4  # 3.75, rounded up
    assert cap.capacity(32, 8, 8.0) == 32  # the whole group
    with pytest.raises(ValueError, match="not 0 tokens and 8 experts"):
        cap.capacity(0, 8, 1.0)
    with pytest.raises(ValueError, match="must be positive, not 0"):
        cap.capacity(32, 8, 0)


def loop_positions(expert, experts):
    """Each token's place in its expert's queue, by counting."""
    seen = [0] * experts
    places = []
    for e in expert:
        places.append(seen[e])
        seen[e] += 1
    return np.array(places)


def test_the_page_example_keeps_the_first_two_tokens_of_each_expert(capsys):
    expert, mask, position = cap.slots_example()
    np.testing.assert_array_equal(position, loop_positions(expert.tolist(), 4))
    assert mask.shape == (8, 4, 2)
    picked = np.flatnonzero(np.asarray(expert) == 2).tolist()
    kept = [t for t in picked if position[t] < 2]
    dropped = [t for t in picked if position[t] >= 2]
    # The prose names them.
    assert picked == [0, 2, 3, 6] and kept == [0, 2] and dropped == [3, 6]
    assert "Expert 2 is picked by tokens 0, 2, 3 and 6. The first two take" in prose()
    assert "tokens 3 and 6 come third and fourth, and are dropped." in prose()
    out = capsys.readouterr().out
    assert out.endswith(
        "kept     [1 1 1 0 1 1 0 1]\nexpert 2, slot by token:\n"
        "[[1 0 0 0 0 0 0 0]\n [0 0 1 0 0 0 0 0]]\n"
    )


@pytest.mark.parametrize("capacity", [1, 3, 40])
def test_slots_give_each_token_its_place_in_the_queue_or_nothing(capacity):
    rng = np.random.default_rng(capacity)
    expert = rng.integers(0, 5, size=40)
    mask, position = cap.slots(expert, 5, capacity)
    places = loop_positions(expert.tolist(), 5)
    np.testing.assert_array_equal(position, places)
    expected = np.zeros((40, 5, capacity))
    for t, (e, p) in enumerate(zip(expert, places, strict=True)):
        if p < capacity:
            expected[t, e, p] = 1
    np.testing.assert_array_equal(mask, expected)
    # No slot is taken twice.
    assert np.asarray(mask).sum(axis=0).max() <= 1


def test_the_reference_drops_a_full_experts_late_tokens():
    d, experts = 4, 3
    rng = np.random.default_rng(0)
    params = {
        "router": np.zeros((d, experts), np.float32),
        "w_in": rng.standard_normal((experts, d, 5)).astype(np.float32),
        "w_out": rng.standard_normal((experts, 5, d)).astype(np.float32),
    }
    params["router"][0] = [10.0, 0.0, 0.0]  # feature 0 large: expert 0
    x = rng.standard_normal((8, d)).astype(np.float32)
    x[:, 0] = 1.0  # every token picks expert 0, with gate e^10 / (e^10 + 2)
    gate = np.exp(10) / (np.exp(10) + 2)
    full = gate * (np.maximum(x @ params["w_in"][0], 0) @ params["w_out"][0])
    y = cap.reference_moe(x, params, groups=2, capacity=3)
    for t in range(8):  # groups of 4: the first 3 of each group are kept
        expected = full[t] if t % 4 < 3 else np.zeros(d)
        np.testing.assert_allclose(y[t], expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        cap.reference_moe(x, params, groups=2), full, rtol=1e-5, atol=1e-6
    )
    with pytest.raises(ValueError, match=r"\(8, 4\) does not cut into 3 equal groups"):
        cap.reference_moe(x, params, groups=3)


def counted_by_loop(tokens, router, groups, size):
    """Routed and kept per expert, counted token by token in NumPy."""
    logits = np.asarray(tokens) @ np.asarray(router)
    choice = logits.argmax(axis=1)  # softmax keeps the order
    routed = np.bincount(choice, minlength=router.shape[1])
    kept = np.zeros_like(routed)
    for group in np.split(choice, groups):
        places = loop_positions(group.tolist(), router.shape[1])
        kept += np.bincount(group[places < size], minlength=router.shape[1])
    return routed, kept


@pytest.mark.parametrize("factor", [1.0, 2.0])
def test_the_load_table_counts_what_each_expert_gets_and_drops(
    x, tokens, params, factor, capsys
):
    size, routed, kept = cap.expert_load(x, params["router"], 8, factor)
    assert size == cap.capacity(32, 8, factor)
    want_routed, want_kept = counted_by_loop(tokens, params["router"], 8, size)
    np.testing.assert_array_equal(routed, want_routed)
    np.testing.assert_array_equal(kept, want_kept)
    assert routed.sum() == 256 and (kept <= 8 * size).all()
    cap.print_load(x, params["router"], 8, factor)
    lines = capsys.readouterr().out.splitlines()
    assert (
        lines[0] == f"capacity factor {factor}: {size} slots per expert in each group"
    )
    assert lines[1].split() == ["expert", *map(str, range(8))]
    assert [int(n) for n in lines[4].split()[1:]] == (routed - kept).tolist()
    assert lines[5] == f"{(routed - kept).sum()} of 256 tokens dropped"


def test_the_prose_about_the_two_factors_holds(x, params):
    """'turn many tokens away' at 1, 'keeps nearly every token' at 2."""
    _, routed, kept_1 = cap.expert_load(x, params["router"], 8, 1.0)
    _, _, kept_2 = cap.expert_load(x, params["router"], 8, 2.0)
    assert (routed - kept_1).sum() > 0.15 * 256
    assert (routed - kept_2).sum() < 0.05 * 256
    assert (kept_1 < 8 * 4).any()  # some experts leave slots empty
    assert "At a factor of 1 the popular experts turn many tokens away" in prose()
    assert "Doubling the factor keeps nearly every token" in prose()
