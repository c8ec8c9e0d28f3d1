"""docs_build.roofline: the chips' published ratios, the compute-bound batch, and a figure
and table drawn from the same rows."""

import math
import re

import pytest

from docs_build import costmodel as cm
from docs_build import render, roofline

ROWS = {
    ("multi-head", 1): {"weight bytes": 100, "cache bytes": 10, "flops": 220},
    ("multi-head", 9): {"weight bytes": 100, "cache bytes": 90, "flops": 1980},
}


def test_every_chip_with_a_published_peak_and_bandwidth_is_drawn():
    found = roofline.chips()
    assert set(found) == {"v5e", "v5p", "h100", "a100"}
    for key, c in found.items():
        links = cm.LINKS[key]
        assert c["ridge"] == links.bf16_flops / links.memory_per_second
        assert c["source"] == links.source and c["url"].startswith("https://")
    assert round(found["v5e"]["ridge"]) == 241  # 197 TFLOP/s over 819 GB/s
    assert round(found["h100"]["ridge"]) == 295  # 989.5 TFLOP/s over 3.35 TB/s


def test_v5e_memory_figures_are_googles():
    assert cm.V5E.memory_per_second == 819e9 and cm.V5E.memory_bytes == 16e9


def test_bfloat16_is_the_dtype_every_chip_publishes_a_peak_for():
    """The page: 'the dtype for which every chip below publishes a peak'."""
    assert all(c.bf16_flops for c in cm.LINKS.values())
    assert {k for k, c in cm.LINKS.items() if c.f32_flops is None} == {"v5e", "v5p"}


@pytest.mark.parametrize(
    ("weights", "flops", "cache", "ridge"),
    [(100, 22, 1, 10), (147456, 163840, 0, 240.5), (10, 50, 4, 12), (5, 3, 1, 3)],
)
def test_the_compute_bound_batch_is_the_first_that_reaches_the_ridge(
    weights, flops, cache, ridge
):
    found = roofline.compute_bound_batch(weights, flops, cache, ridge)

    def reaches(b):
        return b * flops >= ridge * (weights + b * cache)

    if flops <= ridge * cache:
        assert found is None
        assert not any(reaches(b) for b in range(1, 100000))
    else:
        assert reaches(found) and (found == 1 or not reaches(found - 1))


def test_per_sequence_separates_the_weights_from_the_sequences():
    assert roofline.per_sequence(ROWS, "multi-head") == (100, 220, 10)
    with pytest.raises(roofline.RooflineError, match="two batch sizes"):
        roofline.per_sequence({("x", 1): ROWS["multi-head", 1]}, "x")


def test_the_figure_draws_each_row_and_chip_at_its_value():
    svg, text = roofline.draw(ROWS, "A title")
    chips = roofline.chips()
    lines = text.splitlines()
    assert lines[0] == "A title"
    assert lines[2:4] == [
        "decode, multi-head, batch 1: 2.0",
        "decode, multi-head, batch 9: 10.4",
    ]
    assert len(lines) == 4 + len(chips)
    bars = re.findall(r'<rect x="([\d.]+)" y="[\d.]+" width="([\d.]+)"', svg)
    values = [2.0, 1980 / 190] + [c["ridge"] for c in chips.values()]
    assert len(bars) == len(values)
    for (x, width), value in zip(bars, values, strict=True):
        assert float(x) + float(width) == pytest.approx(roofline._x(value), abs=0.1)
    # wider bars for larger values, on one log scale
    assert roofline._x(100) - roofline._x(10) == pytest.approx(
        roofline._x(10) - roofline._x(1)
    )
    # readable on a phone: 13 px text in a drawing no wider than 360 units
    assert 'width="360"' in svg and 'font-size="13"' in svg
    assert "A title" in svg and 'role="img"' in svg
    with pytest.raises(roofline.RooflineError):
        roofline.draw({}, "empty")


def test_the_table_says_never_where_no_batch_is_compute_bound():
    table, text = roofline.table(ROWS)
    lines = text.splitlines()
    assert len(lines) == 1 + len(roofline.chips())
    for line, row in zip(lines[1:], roofline.bound_rows(ROWS), strict=True):
        cells = line.split(" | ")
        assert cells[0] == row["chip"] and cells[2] == "multi-head"
        assert cells[3] == "22.0"  # 220 FLOPs over 10 cache bytes per sequence
        assert cells[4] == "never"  # every chip needs more than 22
        assert cells[5] == f"{math.ceil(row['ridge'] * 100 / 220):,}"
    assert table.count("<tr>") == len(lines)
    assert all(c["url"] in table for c in roofline.chips().values())


def test_the_page_can_draw_both():
    assert isinstance(render.DRAWINGS["decode_roofline"](ROWS, "t"), render.Figure)
    assert isinstance(render.DRAWINGS["decode_bound_table"](ROWS), render.Html)
