"""The choosing page's "From bytes to time": the lower bounds on each layout's step, the
compute-bound rows per device and the overlap sentence, each number held to the published
figures (docs_build/costmodel.py LINKS) and the committed compiled programs, and the claims
the prose makes about them."""

import copy
import dataclasses
import math
import re
from pathlib import Path

import pytest

from docs_build import costmodel as cm
from docs_build import steptime
from docs_build.compiled import overlap, pages
from docs_build.compiled import targets as tg

PAGE = Path(__file__).resolve().parents[3] / "docs" / "training" / "choosing.md"
TEXT = PAGE.read_text(encoding="utf-8")
DATA = pages.results()
MODEL = pages._mlp(DATA)
MIB = 2**20
TIMED = "v5e:2x4 v5p:2x2x2 h100:1x8 h100:2x8"
ONE_NODE = "v5e:2x4 v5p:2x2x2 h100:1x8"


def rows(table: str) -> list[list[str]]:
    """The body rows of a generated table, cell by cell."""
    lines = [line for line in table.splitlines() if line.startswith("| ")]
    return [[c.strip() for c in line.strip("|").split("|")] for line in lines[1:]]


def us(text: str) -> float:
    """`1,259 µs` in seconds."""
    return float(text.removesuffix(" µs").replace(",", "")) * 1e-6


def test_the_page_fills_its_time_tables_and_overlap_sentence():
    assert pages.TIME_BY_STRATEGY.findall(TEXT) == [TIMED]
    assert pages.THRESHOLDS.findall(TEXT) == [ONE_NODE]
    assert TEXT.count(overlap.HIDE_SAID) == 1
    filled = pages.fill(TEXT)
    assert pages.strategy_time_table(TIMED) in filled
    assert pages.threshold_table(ONE_NODE) in filled
    assert overlap.hide_said() in filled
    assert "<!-- time" not in filled and "<!-- overlap" not in filled


def test_the_intro_promises_what_the_page_now_does():
    """The old intro said "It gives no step times"; the page now prices them."""
    intro = TEXT.split("## Setup")[0]
    assert "no step times" not in intro
    assert "a lower bound on how long a step takes" in intro
    for chip in ("v5e", "v5p", "H100"):
        assert chip in intro
    assert "the batch per device above which" in intro


def test_every_number_in_the_time_table_is_the_published_figures_on_the_programs():
    table = pages.strategy_time_table(TIMED)
    body = rows(table)
    targets = TIMED.split()
    assert [(r[0].split(",")[0], r[1]) for r in body] == [
        (t, s) for t in targets for s in pages.PRICED
    ]
    for row in body:
        target, strategy = row[0].split(",")[0], row[1]
        p = pages.program(target, strategy)
        n = DATA["targets"][target]["devices"]
        assert row[0] == f"{target}, {n} devices"
        assert row[2] == f"{pages.wire_mib(p):.1f} MiB"
        chip = cm.LINKS[pages.chip_key(target)]
        # compute: 10 * batch * d * hidden over the devices, at the published bf16 peak
        flops = 10 * MODEL.batch * MODEL.d * MODEL.hidden / n
        assert us(row[3]) == pytest.approx(flops / chip.bf16_flops, rel=5e-3)
        family = tg.FAMILIES[tg.family(target)]
        within, between = family.within, family.between
        sent = {net: pages.network_mib(p, net) * MIB for net in (within, between)}
        assert row[4].startswith(pages.NETWORK_LABEL[within] + " ")
        assert row[5].startswith(pages.NETWORK_LABEL[between] + " ")
        for cell, net, rate in (
            (row[4], within, chip.within),
            (row[5], between, chip.between),
        ):
            assert us(cell.split(" ", 1)[1]) == pytest.approx(
                sent[net] / rate, rel=5e-3, abs=1e-9
            )
        least = max(flops / chip.bf16_flops, sent[within] / chip.within)
        least = max(least, sent[between] / chip.between)
        assert us(row[6].split(" (")[0]) == pytest.approx(least, rel=5e-3)
    for key in ("v5e", "v5p", "h100"):
        c = cm.LINKS[key]
        assert f"{c.chip}: [{c.source}]({c.url})" in table
    assert "lower bounds on its time" in table and "a real step is slower" in table


def test_the_tables_follow_the_published_figures(monkeypatch):
    """Computed, not typed: halve v5e's published ICI rate and its rows double; raise
    its peak and the thresholds move."""
    before = pages.strategy_time_table(TIMED)
    thresholds = pages.threshold_batches(ONE_NODE)
    slower = dataclasses.replace(cm.V5E, within=cm.V5E.within / 2)
    monkeypatch.setitem(cm.LINKS, "v5e", slower)
    after = pages.strategy_time_table(TIMED)
    assert after != before
    first = rows(after)[0]
    assert first[0].startswith("v5e:2x4") and first[1] == "data parallel"
    old = rows(before)[0]
    assert us(first[4].split(" ", 1)[1]) == pytest.approx(
        2 * us(old[4].split(" ", 1)[1]), rel=5e-3
    )
    moved = pages.threshold_batches(ONE_NODE)
    assert moved["data parallel"]["v5e:2x4"] == pytest.approx(
        2 * thresholds["data parallel"]["v5e:2x4"]
    )


def test_every_threshold_is_the_steptime_bound_under_the_compiled_plan():
    table = pages.threshold_table(ONE_NODE)
    body = rows(table)
    targets = ONE_NODE.split()
    header = next(line for line in table.splitlines() if line.startswith("| layout"))
    for t in targets:
        assert f"{t} ({pages.links(t).chip})" in header
    assert [r[0] for r in body] == list(pages.PRICED)
    for row in body:
        strategy = row[0]
        mesh = pages.program(targets[0], strategy)["mesh"]
        assert int(row[1]) == MODEL.batch // mesh.get("data", 1)
        for cell, target in zip(row[2:], targets, strict=True):
            p = pages.program(target, strategy)
            assert p["mesh"] == mesh
            expected = steptime.compute_bound_batch(
                strategy, mesh, pages.chip_key(target), MODEL, cm.plan_of(p)
            )
            if math.isinf(expected):
                assert cell == "none"
            else:
                assert cell == f"{expected:,.0f}"
                # the formula under the compiled plan gives the compiled bytes
                assert cm.wire_bytes(strategy, mesh, MODEL, cm.plan_of(p)) == (
                    pytest.approx(pages.wire_mib(p) * MIB, rel=cm.TOLERANCE)
                )


def test_a_threshold_is_refused_where_the_step_crosses_nodes():
    with pytest.raises(pages.CompiledResultsError, match="one slice or node"):
        pages.threshold_batches("h100:2x8")
    with pytest.raises(pages.CompiledResultsError, match="no published peak"):
        pages.threshold_batches("cpu v5e:2x4")


def test_the_prose_claims_about_the_bounds():
    bounds = {
        (t, s): pages.step_bound(pages.program(t, s))
        for t in TIMED.split()
        for s in pages.PRICED
    }
    # "Every one of these steps is bound by its links, not its matrix units, and on two
    # nodes by InfiniBand."
    assert (
        "**Every one of these steps is bound by its links, not its matrix units**"
        in (TEXT)
    )
    # "two nodes of 8 H100s for a step whose collectives cross InfiniBand"
    assert "two nodes of 8 H100s for a step whose" in TEXT
    two = DATA["targets"]["h100:2x8"]
    assert (two["nodes"], two["gpus_per_node"], two["card"]) == (2, 8, "h100")
    for (target, _), b in bounds.items():
        assert b.communication > b.compute
        if target == "h100:2x8":
            assert b.networks["ib"] == b.communication > b.networks["nvlink"]
    # "Tensor parallelism sends the fewest bytes at this batch and has the lowest bound on
    # every target"
    for target in TIMED.split():
        sent = {s: pages.wire_mib(pages.program(target, s)) for s in pages.PRICED}
        least = {s: bounds[target, s].perfect_overlap for s in pages.PRICED}
        assert min(sent, key=sent.get) == min(least, key=least.get) == "tensor parallel"
    # "but its all-reduce grows with the batch as its matmuls do"
    for batch in (256, 512, 4096):
        model = cm.MLP(MODEL.d, MODEL.hidden, batch)
        ratio = cm.wire_bytes("tensor parallel", {"model": 8}, model) / (
            steptime.matmul_flops("tensor parallel", {"model": 8}, model)
        )
        assert ratio == pytest.approx(
            cm.wire_bytes("tensor parallel", {"model": 8}, MODEL)
            / steptime.matmul_flops("tensor parallel", {"model": 8}, MODEL)
        )
    # "Data parallelism and FSDP send the same bytes whatever the batch" under each
    # compiled plan, "so enough rows per device make them compute-bound"
    found = pages.threshold_batches(ONE_NODE)
    for strategy in ("data parallel", "FSDP"):
        for target in ONE_NODE.split():
            plan = cm.plan_of(pages.program(target, strategy))
            small, large = (cm.MLP(MODEL.d, MODEL.hidden, b) for b in (8, 8 * 4096))
            assert cm.wire_bytes(strategy, {"data": 8}, small, plan) == cm.wire_bytes(
                strategy, {"data": 8}, large, plan
            )
            assert math.isfinite(found[strategy][target])
            assert found[strategy][target] > MODEL.batch / 8
    assert all(math.isinf(r) for r in found["tensor parallel"].values())


def test_the_overlap_sentence_is_the_overlap_pages_bound():
    said = overlap.hide_said()
    second = [h for h in overlap.hide_rows() if h.layer == 2]
    assert [h.chip for h in second] == ["v5e", "v5p", "h100"]
    numbers = [
        int(n.replace(",", "")) for n in re.findall(r"(\d[\d,]*) (?:rows|on)", said)
    ]
    assert numbers == [round(h.rows_needed) for h in second] + [MODEL.batch // 8]
    for h in second:
        width = "bf16" if h.width == 2 else "f32"
        assert f"on {cm.LINKS[h.chip].chip} ({width})" in said
        # the overlap page's criterion: the rows at which send time equals compute time
        c = cm.LINKS[h.chip]
        peak = steptime.peak(h.chip, "bfloat16" if h.width == 2 else "float32")
        assert h.rows_needed == pytest.approx(7 / 8 * h.width * peak / (2 * c.within))
    assert f"the compiled step has {MODEL.batch // 8} rows per device" in said
    assert said.endswith("so it hides on none of them")
    assert not any(h.hides for h in second)


def test_the_overlap_sentence_says_yes_when_the_batch_allows():
    data = copy.deepcopy(DATA)
    data["model"]["batch"] = DATA["model"]["batch"] * 16  # 512 rows per device
    said = overlap.hide_said(data)
    assert said.endswith("so it hides on H100 SXM")
