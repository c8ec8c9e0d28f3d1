"""docs_build.timeline: one lane per device, one box per span where it ran, colours that read on
both schemes, a text that names lanes and ops but no time, and refusals that say what is wrong."""

import re

import pytest

from docs_build import render, timeline

LIGHT, DARK = "#ffffff", "#1e2129"  # Material's default and slate backgrounds
SPANS = [
    (0, "all-gather", 0.0, 400.0, "collective"),
    (0, "all-gather", 2.0, 150.0, "waiting"),
    (0, "fusion", 400.5, 3.0, "compute"),
    (1, "all-gather", 20.0, 380.0, "collective"),
    (1, "all-gather", 22.0, 100.0, "waiting"),
    (1, "fusion", 401.0, 2.5, "compute"),
]


def boxes(svg: str) -> list[dict[str, str]]:
    """The drawn spans: rects with a tooltip (the legend's swatches have none)."""
    return [
        dict(re.findall(r'([\w-]+)="([^"]*)"', attrs)) | {"tip": tip}
        for attrs, tip in re.findall(
            r"<rect ([^>]*)><title>([^<]*)</title></rect>", svg
        )
    ]


def test_each_span_is_a_box_in_its_lane_at_its_time():
    svg, _ = timeline.draw(SPANS, "t")
    drawn = boxes(svg)
    assert len(drawn) == len(SPANS)
    scale = timeline.PLOT_W / 403.5  # the last span ends at 403.5 µs
    by_tip = {b["tip"]: b for b in drawn}
    gather = by_tip["device 1: all-gather, 380.0 µs, collective"]
    assert float(gather["x"]) == pytest.approx(timeline.LEFT + 20 * scale, abs=0.06)
    assert float(gather["width"]) == pytest.approx(380 * scale, abs=0.06)
    assert gather["fill"] == timeline.KINDS["collective"][0]
    lane_1 = float(gather["y"])
    wait = by_tip["device 1: all-gather, 100.0 µs, waiting"]
    assert (
        float(wait["y"]) == lane_1 + timeline.LANE - timeline.STRIP
    )  # a strip at the bottom
    assert wait["fill"] == timeline.KINDS["waiting"][0]
    fusion = by_tip["device 0: fusion, 3.0 µs, compute"]
    assert float(fusion["y"]) == lane_1 - timeline.LANE - timeline.GAP
    assert float(fusion["width"]) >= 1.0  # a short op stays visible
    # Strips are drawn after the boxes they sit on.
    tips = [b["tip"] for b in drawn]
    assert max(i for i, t in enumerate(tips) if "collective" in t) < min(
        i for i, t in enumerate(tips) if "waiting" in t
    )


def test_lanes_axis_legend_and_labels_that_fit():
    svg, _ = timeline.draw(SPANS, "t")
    assert re.findall(r">device (\d)</text>", svg) == ["0", "1"]
    assert "µs after the step's first op" in svg
    ticks = re.findall(r'text-anchor="middle">(\d+)</text>', svg)
    assert ticks == ["0", "100", "200", "300", "400"]
    for _, name in timeline.KINDS.values():
        assert f">{name}</text>" in svg
    # The wide all-gathers are labelled in the box; the 3 µs fusions are too narrow.
    assert re.findall(r'class="collective">([^<]+)</text>', svg) == ["all-gather"] * 2
    assert 'class="compute">' not in svg


def test_the_text_names_lanes_and_ops_in_order_and_no_time():
    _, text = timeline.draw(SPANS, "One step")
    assert text.splitlines() == [
        "One step",
        "one lane per device (2), time in µs across",
        "devices 0, 1 ran, in order: all-gather, fusion",
    ]
    many = [
        (d, op, float(i), 1.0, "compute") for d in range(8) for i, op in enumerate("ab")
    ]
    many += [(8, "c", 0.0, 1.0, "compute")]
    assert timeline.describe(many, "t").splitlines()[2:] == [
        "devices 0-7 ran, in order: a, b",
        "devices 8 ran, in order: c",
    ]


def test_fills_are_the_kinds_whatever_fits_a_label():
    """The golden snapshot records a drawing's fills: they must not depend on the times."""
    for spans in (
        SPANS,
        [(0, "x", 0.0, 1.0, "compute"), (1, "x", 0.0, 1000.0, "compute")],
    ):
        svg, _ = timeline.draw(spans, "t")
        fills = set(re.findall(r'fill="(#[0-9a-fA-F]{6})"', svg))
        assert fills == {colour for colour, _ in timeline.KINDS.values()}


def test_colours_read_on_both_backgrounds_and_labels_on_their_boxes():
    for colour, _ in timeline.KINDS.values():
        assert render.contrast(colour, LIGHT) >= 3.0, colour
        assert render.contrast(colour, DARK) >= 3.0, colour
    for kind, ink in timeline.LABEL_INK.items():
        assert render.contrast(ink, timeline.KINDS[kind][0]) >= 4.5, kind


def test_the_drawing_is_labelled_self_contained_and_one_line():
    svg, _ = timeline.draw(SPANS, "A <step>")
    ident = re.search(r'<svg id="(tl-[0-9a-f]{8})"', svg)[1]
    assert f'role="img" aria-labelledby="{ident}-title {ident}-desc"' in svg
    assert f'<title id="{ident}-title">A &lt;step&gt;</title>' in svg
    assert f'<desc id="{ident}-desc">' in svg
    assert "http" not in svg.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "\n" not in svg  # Markdown passes it through as one HTML block
    # Two drawings on one page need their own ids: they come from the title.
    other = re.search(r'<svg id="(tl-[0-9a-f]{8})"', timeline.draw(SPANS, "B")[0])[1]
    assert other != ident
    assert (
        ident == re.search(r'<svg id="([^"]+)"', timeline.draw(SPANS, "A <step>")[0])[1]
    )


def test_the_build_draws_it_as_a_figure():
    figure = render.DRAWINGS["timeline"](SPANS, "t")
    assert isinstance(figure, render.Figure)
    assert (figure.svg, figure.text) == timeline.draw(SPANS, "t")


@pytest.mark.parametrize(
    ("spans", "message"),
    [
        ([], "at least one span"),
        ([(0, "a", 0.0, 1.0)], r"a span is \(device, op, start, duration, kind\)"),
        ([(0, "a", 0.0, 1.0, "idle")], r"span kind 'idle' is not one of"),
        ([(0, "a", -1.0, 1.0, "compute")], "starts or lasts less than 0"),
    ],
)
def test_spans_it_cannot_draw_are_refused(spans, message):
    with pytest.raises(ValueError, match=message):
        timeline.draw(spans, "t")
