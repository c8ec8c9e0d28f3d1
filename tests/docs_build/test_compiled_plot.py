"""The scaling plot: every point is a compiled figure or its formula, the rings mark exactly the
plan changes the list names, and the drawing reads in both colour schemes."""

import itertools
import re
from pathlib import Path

import pytest

from docs_build import costmodel as cm
from docs_build.compiled import pages, plot

SCALING = Path(__file__).resolve().parents[2] / "docs" / "training" / "scaling.md"
LIGHT, DARK = "#ffffff", "#1e2129"  # Material's default and slate backgrounds


def luminance(colour: str) -> float:
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [
        c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels
    ]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_every_point_is_the_compiled_figure():
    svg = plot.svg()
    groups = re.findall(
        r'<g class="series" data-field="(\w+)" data-strategy="([^"]+)">(.*?)</g>', svg
    )
    # five strategies sent, four kept (the pipeline has no training state)
    assert len(groups) == 9
    for field, strategy, body in groups:
        drawn = [float(v) for v in re.findall(r'data-mib="([\d.]+)"', body)]
        expected = [pages.mib(pages.program(t, strategy), field) for t in plot.TARGETS]
        assert drawn == pytest.approx(expected, abs=1e-4)
        assert body.count("<polyline") == 2  # compiled, and the formula dashed


def test_formulas_are_the_cost_models_under_the_taught_plan():
    points = plot.series()
    model = cm.MLP(1024, 4096, 256)
    for p, target in zip(points["wire", "FSDP"], plot.TARGETS, strict=True):
        mesh = pages.program(target, "FSDP")["mesh"]
        assert p["formula"] == pytest.approx(
            cm.wire_bytes("data parallel", mesh, model) / pages.MIB
        )


def test_rings_mark_exactly_the_plan_changes_listed():
    changes = plot.plan_changes()
    # FSDP: all-gathers give way to all-reduces at 64 chips, bf16 to f32 at 256
    assert [(c["strategy"], c["to"]["chips"]) for c in changes] == [
        ("FSDP", 64),
        ("FSDP", 256),
    ]
    assert "all-gather" in changes[0]["from"]["plan"]
    assert "all-reduce of bf16" in changes[0]["to"]["plan"]
    assert "f32" in changes[1]["to"]["plan"]
    figure = plot.figure()
    assert figure.count('class="plan-change"') == len(changes)
    assert len(re.findall(r"^\d\. \*\*FSDP", figure, re.MULTILINE)) == len(changes)


def test_the_scaling_pages_claims_about_the_plot_hold():
    points = plot.series()
    for strategy in ("data parallel", "tensor parallel", "2-D"):
        for p in points["wire", strategy]:
            assert p["compiled"] == pytest.approx(p["formula"], rel=cm.TOLERANCE)
    for strategy in ("data parallel", "FSDP", "tensor parallel", "2-D"):
        for p in points["state", strategy]:
            assert p["compiled"] == pytest.approx(p["formula"], rel=cm.TOLERANCE)
    dp = [p["compiled"] for p in points["wire", "data parallel"]]
    assert dp[-1] < 1.2 * dp[0]  # barely grows
    fsdp = [p["compiled"] for p in points["state", "FSDP"]]
    chips = [p["chips"] for p in points["state", "FSDP"]]
    for (s0, c0), (s1, c1) in itertools.pairwise(zip(fsdp, chips, strict=True)):
        assert s0 / s1 == pytest.approx(c1 / c0, rel=0.05)  # in proportion to the chips
    tp = [p["compiled"] for p in points["state", "tensor parallel"]]
    assert tp[0] / tp[-1] < chips[-1] / chips[0] / 4  # more slowly
    two_d = [p["compiled"] for p in points["state", "2-D"]]
    assert max(two_d) < 1.05 * min(two_d)  # hardly at all
    for p in points["wire", "pipeline"]:
        assert p["compiled"] == pytest.approx(p["formula"] / 2, rel=0.01)
    text = SCALING.read_text(encoding="utf-8")
    assert plot.PLOT in text and "half its\nformula" in text


def test_colours_read_on_both_backgrounds():
    for colour in plot.COLOURS.values():
        assert contrast(colour, LIGHT) >= 3.0 and contrast(colour, DARK) >= 3.0, colour


def test_the_drawing_is_labelled_and_self_contained():
    svg = plot.svg()
    assert (
        'role="img"' in svg and 'aria-labelledby="tpu-plot-title tpu-plot-desc"' in svg
    )
    assert "<title id=" in svg and "<desc id=" in svg
    assert "http" not in svg.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "\n" not in svg  # one line: Markdown passes it through as one HTML block
