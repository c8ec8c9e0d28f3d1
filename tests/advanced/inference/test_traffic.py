"""The decode step's bytes and FLOPs: the formula, the compiled programs, and the page."""

import math
import re
from pathlib import Path

import pytest

from docs_build import roofline
from docs_build.compiled import pages
from snippets.advanced.inference import decode, grouped, traffic
from tests.advanced.inference.conftest import quietly

PAGE = Path(__file__).resolve().parents[3] / "docs" / "advanced" / "inference-caches.md"
EMBEDDINGS = 4 * (decode.VOCAB + decode.MAX_LEN) * decode.D_MODEL  # f32 tables


def count_by_hand(batch: int, kv_heads: int, itemsize: int) -> dict[str, int]:
    d, h, k, hd, length = 128, 8, kv_heads, 16, 32
    projections = (
        d * h * hd + 2 * d * k * hd + h * hd * d + d * 64
    )  # q, k, v, o, unembed
    per_sequence = 2 * projections + 2 * (2 * h * length * hd)  # + scores and mixing
    return {
        "weight bytes": itemsize * projections,
        "cache bytes": itemsize * 2 * batch * k * length * hd,
        "flops": batch * per_sequence,
    }


@pytest.mark.parametrize("kv_heads", [8, 2, 1])
@pytest.mark.parametrize("batch", [1, 8, 512])
@pytest.mark.parametrize("itemsize", [2, 4])
def test_the_formula_counts_what_the_layer_does(batch, kv_heads, itemsize):
    step = traffic.decode_traffic(batch, kv_heads, itemsize)
    assert step == count_by_hand(batch, kv_heads, itemsize)
    assert traffic.intensity(step) == step["flops"] / (
        step["weight bytes"] + step["cache bytes"]
    )


def test_bad_sizes_say_what_to_change():
    with pytest.raises(ValueError, match=r"batch >= 1 \(0\)"):
        traffic.decode_traffic(0, 8)
    with pytest.raises(ValueError, match=r"itemsize 2 .* or 4 .*, not 8"):
        traffic.decode_traffic(1, 8, itemsize=8)
    with pytest.raises(ValueError, match="cannot share 3 key-value heads"):
        traffic.decode_traffic(1, 3)


@pytest.mark.parametrize("target", ["cpu", "h100:1x8"])
def test_the_bytes_are_what_the_compiled_step_holds(target):
    """The batch layout's step holds one sequence per device and every weight in float32:
    its arguments are the formula's weights, the embedding tables (indexed, not read
    whole, so not in the formula) and the cache, plus the token and its position."""
    p = pages.advanced_program(target, "decode, cache by batch")
    step = traffic.decode_traffic(1, decode.HEADS, itemsize=4)
    held = step["weight bytes"] + EMBEDDINGS + step["cache bytes"]
    assert p["memory"]["argument_bytes"] == held + 4 + 4
    assert p["memory"]["alias_bytes"] == step["cache bytes"]


@pytest.mark.parametrize("target", ["v5e:2x4", "v5p:2x2x2"])
def test_a_tpu_pads_what_it_holds(target):
    p = pages.advanced_program(target, "decode, cache by batch")
    step = traffic.decode_traffic(1, decode.HEADS, itemsize=4)
    assert p["memory"]["argument_bytes"] > step["weight bytes"] + step["cache bytes"]


@pytest.mark.parametrize("target", ["cpu", "v5e:2x4", "v5p:2x2x2"])
def test_the_flops_are_within_2_5_percent_of_the_compilers_count(target):
    """cost_analysis() also counts the softmax and the adds, which the formula leaves
    out (the GPU compile reports no FLOPs)."""
    p = pages.advanced_program(target, "decode, cache by batch")
    flops = traffic.decode_traffic(1, decode.HEADS)["flops"]
    assert flops < p["cost"]["flops"] <= flops * 1.025


def test_the_page_prints_each_rows_bytes_and_intensity():
    rows, printed = quietly(traffic.show_traffic)
    lines = [
        re.split(r"\s{2,}|(?<=\d) (?=\d)", ln.strip()) for ln in printed.splitlines()
    ]
    assert lines[0] == ["attention", "batch", "weights", "cache", "FLOP/B"]
    assert len(rows) == len(lines) - 1 == 8
    for ((name, batch), step), line in zip(rows.items(), lines[1:], strict=True):
        assert step == traffic.decode_traffic(batch, grouped.ATTENTION[name], 2)
        assert line == [
            name,
            str(batch),
            f"{step['weight bytes']:,}",
            f"{step['cache bytes']:,}",
            f"{traffic.intensity(step):.1f}",
        ]


def test_the_prose_holds_for_every_chip():
    rows, _ = quietly(traffic.show_traffic)
    found = roofline.bound_rows(rows)
    assert {r["chip"] for r in found} == {c["chip"] for c in roofline.chips().values()}
    assert len(found) == 8  # four chips, two attentions
    # "with the cache at its full 32 slots that limit is below every chip's"
    assert all(r["with cache"] is None and r["limit"] < r["ridge"] for r in found)
    # "Fewer key-value heads raise the limit"
    limits = {r["attention"]: r["limit"] for r in found}
    assert limits["multi-query"] > limits["multi-head"]
    # "were the cache free ... compute-bound, at a batch in the hundreds"
    assert all(100 <= r["weights only"] < 1000 for r in found)
    text = " ".join(PAGE.read_text().split())
    for said in (
        "with the cache at its full 32 slots that limit is below every chip's",
        "Fewer key-value heads raise the limit",
        "at a batch in the hundreds",
        "fewer FLOPs per byte read at any batch than any chip listed needs",
    ):
        assert said in text, said
    assert decode.MAX_LEN == 32
    assert math.isclose(limits["multi-head"], 10.0)
