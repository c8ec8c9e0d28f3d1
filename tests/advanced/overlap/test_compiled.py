"""The overlap page's drawings and hide table (docs_build/compiled/overlap.py), and the claims
its prose makes about them, held to the committed results/{cpu,tpu,gpu}.json."""

import re
from pathlib import Path

import pytest

from docs_build import costmodel as cm
from docs_build import steptime
from docs_build.compiled import overlap, pages
from docs_build.compiled.results import results, wire_mib

PAGE = Path(__file__).resolve().parents[3] / "docs" / "advanced" / "overlap.md"
DATA = results()
CHARTS = overlap.CHART.findall(PAGE.read_text())


def forms(target, name):
    return [c["form"] for c in overlap.find(target, name, DATA)["collectives"]]


def test_the_page_draws_each_backend_fsdp_step_and_the_rings():
    drawn = {(t.strip(), n.strip()) for t, n in CHARTS}
    for target in ("cpu", "v5e:2x4", "v5p:2x2x2", "h100:1x8"):
        assert (target, "FSDP") in drawn
    assert ("h100:1x8", "FSDP, no latency-hiding scheduler") in drawn
    assert overlap.HIDE_TABLE in PAGE.read_text()


@pytest.mark.parametrize("target,name", CHARTS)
def test_each_drawing_is_its_schedule(target, name):
    """Every bar spans its start..done, holds the matmuls the compiler put in flight
    (the driver's own in_flight record; a TPU asynchronous collective fusion, which
    in_flight does not read, is a record of that form), and every matmul run of the
    schedule is a box."""
    p = overlap.find(target.strip(), name.strip(), DATA)
    schedule, _ = overlap.drawn(p)
    spans, runs = overlap.spans(schedule)
    paired = [s for s in spans if s.asynchronous]
    flights = {f["start"]: f["matmuls"] for f in p["in_flight"]}
    fused = {c["name"] for c in p["collectives"] if c["form"] == "async-fusion"}
    assert all(s.name in flights or s.name in fused for s in paired)
    assert [s.matmuls for s in paired if s.name in flights] == [
        flights[s.name] for s in paired if s.name in flights
    ]
    svg = overlap.svg(target.strip(), name.strip(), DATA)
    bars = re.findall(
        r'class="collective" data-kind="([\w-]+)" data-first="(\d+)" '
        r'data-last="(\d+)" data-matmuls="(\d+)"',
        svg,
    )
    assert bars == [(s.kind, str(s.first), str(s.last), str(s.matmuls)) for s in spans]
    boxes = re.findall(r'class="matmul" data-column="(\d+)" data-count="(\d+)"', svg)
    assert boxes == [(str(c), str(n)) for c, n in runs]
    rows = [r for r in schedule if r[0] == "matmul"]
    assert sum(int(n) for _, n in boxes) == sum(r[1] for r in rows)
    words = overlap.describe(target.strip(), name.strip(), DATA)
    assert len(words) == len(spans) + len(runs)


def test_spans_refuse_a_done_without_its_start():
    with pytest.raises(ValueError, match="no start opened"):
        overlap.spans([["all-gather-done", "all-gather-done", None]])
    with pytest.raises(ValueError, match="without its done"):
        overlap.spans([["all-gather-start", "s", ["f32[8]"]]])


def test_what_the_prose_says_of_the_fsdp_steps():
    # CPU and v5p: every collective synchronous
    assert set(forms("cpu", "FSDP")) == {"sync"}
    assert set(forms("v5p:2x2x2", "FSDP")) == {"sync"}
    # H100: every collective asynchronous; one matmul inside the second gather only
    assert set(forms("h100:1x8", "FSDP")) == {"async"}
    flights = overlap.find("h100:1x8", "FSDP", DATA)["in_flight"]
    assert [(f["kind"], f["matmuls"]) for f in flights] == [
        ("all-gather", 0),
        ("all-gather", 1),
        ("reduce-scatter", 0),
        ("all-reduce", 0),
    ]
    # v5p: four synchronous gathers, five matmuls, one all-reduce of the gradients
    v5p = overlap.find("v5p:2x2x2", "FSDP", DATA)
    assert [
        r[0] if r[0] != "matmul" else ("matmul", r[1]) for r in v5p["schedule"]
    ] == ["all-gather"] * 4 + [("matmul", 5), "all-reduce"]
    # v5e: three synchronous gathers; the second kernel's gather is an asynchronous fusion
    # with one matmul in flight (layer 1's forward, read from the fixture in
    # tests/docs_build/test_schedule.py); the two gradient reduce-scatters are synchronous,
    # each after the matmuls that make its gradient
    v5e = overlap.find("v5e:2x4", "FSDP", DATA)
    spans, runs = overlap.spans(v5e["schedule"])
    assert [(s.kind, s.asynchronous, s.matmuls) for s in spans] == [
        ("all-gather", False, 0),
        ("all-gather", False, 0),
        ("all-gather", False, 0),
        ("all-gather", True, 1),
        ("reduce-scatter", False, 0),
        ("reduce-scatter", False, 0),
        ("all-reduce", False, 0),
    ]
    (fused,) = [c for c in v5e["collectives"] if c["form"] == "async-fusion"]
    (bar,) = [s for s in spans if s.asynchronous]
    assert bar.name == fused["name"] and fused["shapes"] == ["bf16[4096,1024]"]
    assert sum(n for _, n in runs) == 5
    said = " ".join(PAGE.read_text().split())
    assert "lists only instructions that are themselves collectives" not in said
    assert "the gather of the second layer's kernel is asynchronous" in said


def test_without_the_scheduler_every_collective_waits_and_the_bytes_stay():
    on = overlap.find("h100:1x8", "FSDP", DATA)
    off = overlap.find("h100:1x8", "FSDP, no latency-hiding scheduler", DATA)
    assert set(forms("h100:1x8", "FSDP, no latency-hiding scheduler")) == {"sync"}
    assert off["in_flight"] == []
    assert wire_mib(off) == pytest.approx(wire_mib(on), rel=1e-9)


def test_what_the_prose_says_of_the_matmuls():
    for target in ("cpu", "v5e:2x4", "v5p:2x2x2", "h100:1x8"):
        assert forms(target, "gather matmul") == ["sync"]
        assert [
            c["kind"]
            for c in overlap.find(target, "gather matmul", DATA)["collectives"]
        ] == ["all-gather"]
    assert forms("cpu", "ring matmul") == ["sync"] * 7
    assert forms("h100:1x8", "ring matmul") == ["sync"] * 6 + ["async"]
    assert [
        f["matmuls"] for f in overlap.find("h100:1x8", "ring matmul", DATA)["in_flight"]
    ] == [0]
    for target in ("v5e:2x4", "v5p:2x2x2"):
        assert set(forms(target, "ring matmul")) == {"async"}
        counts = [
            f["matmuls"] for f in overlap.find(target, "ring matmul", DATA)["in_flight"]
        ]
        # back to back first, products only inside the last few
        assert counts[:4] == [0, 0, 0, 0] and counts[-1] > 0


def said(page: str = "") -> str:
    return " ".join((page or PAGE.read_text()).split())


def loop_spans(target: str) -> list:
    """The spans of XLA's collective matmul as the page draws it: its one loop's body."""
    schedule, loop = overlap.drawn(overlap.find(target, "XLA collective matmul", DATA))
    assert loop is not None
    return overlap.spans(schedule)


def xla_matmul_claims(data: dict) -> None:
    """What the page says of XLA's collective matmul, against `data`."""
    find = lambda target, name: overlap.find(target, name, data)  # noqa: E731
    # "Without the option every backend gathers x in one synchronous all-gather"
    for target in ("cpu", "v5e:2x4", "v5p:2x2x2", "h100:1x8"):
        plain = find(target, "XLA matmul")
        assert [(c["kind"], c["form"]) for c in plain["collectives"]] == [
            ("all-gather", "sync")
        ], target
        assert plain["extra"]["options"] == {}
    # the CPU takes the GPU option and compiles the program it has without it
    cpu, cpu_plain = find("cpu", "XLA collective matmul"), find("cpu", "XLA matmul")
    assert cpu["extra"]["options"] == {"xla_gpu_threshold_for_windowed_einsum_mib": 0}
    for field in ("collectives", "schedule", "in_flight", "memory", "loops"):
        assert cpu[field] == cpu_plain[field], field
    # H100: no all-gather left; one loop, run once, of eight permutes of a 512-row
    # block and eight matmuls; the first permute synchronous, each of the other seven
    # in flight over one matmul
    h100 = find("h100:1x8", "XLA collective matmul")
    assert h100["extra"]["options"] == cpu["extra"]["options"]
    assert {c["kind"] for c in h100["collectives"]} == {"collective-permute"}
    assert h100["schedule"] == []
    (loop,) = h100["loops"]
    assert loop["trip_count"] == 1
    assert [c["shapes"] for c in h100["collectives"]] == [["bf16[512,4096]"]] * 8
    schedule, _ = overlap.drawn(h100)
    spans, runs = overlap.spans(schedule)
    assert sum(n for _, n in runs) == 8
    assert [(s.asynchronous, s.matmuls) for s in spans] == [(False, 0)] + [
        (True, 1)
    ] * 7
    assert [f["matmuls"] for f in h100["in_flight"]] == [1] * 7
    # "eight blocks of 4 MiB per device, where the gather sent seven eighths of 32 MiB"
    assert wire_mib(h100) == 8 * 4
    assert wire_mib(find("h100:1x8", "XLA matmul")) == 7 / 8 * 32
    # libtpu, "the same on v5e and v5p": blocks both ways round the ring; one permute
    # before a loop that runs twice; each trip a block each way, both passed on (the
    # second pair), two matmuls while that second pair travels; nine permutes, 36 MiB,
    # four of the nine with matmuls beside them
    v5e, v5p = (find(t, "XLA collective matmul") for t in ("v5e:2x4", "v5p:2x2x2"))
    for field in ("schedule", "in_flight", "loops", "summary", "extra"):
        assert v5e[field] == v5p[field], field
    assert v5e["extra"]["options"] == {
        "xla_tpu_all_gather_collective_matmul_mode": "post_spmd"
    }
    assert {c["kind"] for c in v5e["collectives"]} == {"collective-permute"}
    ways = {c["replica_groups"] for c in v5e["collectives"]}
    assert len(ways) == 2
    one, other = (set(re.findall(r"\{(\d+),(\d+)\}", w)) for w in ways)
    assert other == {(b, a) for a, b in one}
    entry = overlap.spans(v5e["schedule"])[0]
    assert [(s.kind, s.matmuls) for s in entry] == [("collective-permute", 0)]
    (loop,) = v5e["loops"]
    assert loop["trip_count"] == 2
    spans, runs = overlap.spans(loop["schedule"])
    assert [(s.kind, s.asynchronous, s.matmuls) for s in spans] == [
        ("collective-permute", True, 0),
        ("collective-permute", True, 0),
        ("collective-permute", True, 2),
        ("collective-permute", True, 2),
    ]
    assert sum(n for _, n in runs) == 2
    directions = {c["name"]: c["replica_groups"] for c in v5e["collectives"]}
    assert {directions[s.name] for s in spans[:2]} == ways
    assert {directions[s.name] for s in spans[2:]} == ways
    assert v5e["summary"]["collective-permute"]["runs"] == 9
    assert wire_mib(v5e) == 9 * 4
    beside = {f["start"] for f in v5e["in_flight"] if f["matmuls"]}
    assert sum(c["runs"] for c in v5e["collectives"] if c["name"] in beside) == 4


def test_what_the_prose_says_of_xlas_collective_matmul():
    xla_matmul_claims(DATA)
    text = said()
    assert "<!-- overlap-chart: h100:1x8 / XLA collective matmul -->" in text
    assert "<!-- tpu-programs: XLA matmul | XLA collective matmul -->" in text
    assert "the H100 program has no all-gather left" in text
    assert "eight collective-permutes of a 512-row block of x and eight matmuls" in text
    assert "each of the other seven travels while one matmul runs" in text
    assert (
        "eight blocks of 4 MiB per device, where the gather sent seven eighths" in text
    )
    for target in ("v5e:2x4", "v5p:2x2x2"):
        assert f"<!-- overlap-chart: {target} / XLA collective matmul -->" in text
    assert "libtpu's plan, the same on v5e and v5p, sends blocks both ways" in text
    assert "One permute runs before a loop that runs twice" in text
    assert "runs two matmuls while that second pair travels" in text
    assert (
        "nine permutes per call, 36 MiB per device; four of them, the second pair"
        in text
    )
    # the table counts the v5e permutes as the program holds them, and how often they run
    row = next(
        line
        for line in pages.programs_table("XLA collective matmul", DATA).splitlines()
        if "| v5e:2x4 |" in line
    )
    assert "| 5 collective-permute (9 runs), bf16, async | 36.0 MiB |" in row
    assert "XLA's compilers for the H100 and for v5e and v5p can write the ring" in text
    assert "The rewrite is theirs, not the CPU's" in text
    assert "shows no program of it" not in text


def test_across_nodes_the_card_kept_the_all_gather():
    """overlap.md: compiled on the lent H100 as 8 nodes of one GPU each, XLA collective
    matmul kept its one all-gather (the card's record, results/gpu_card.json)."""
    from docs_build.compiled import card

    found = card.record()["found"]["8 nodes"]["XLA collective matmul"]
    assert [(c["kind"], c["group_size"]) for c in found["collectives"]] == [
        ("all-gather", 8)
    ]
    one_node = card.record()["found"]["file spec"]["XLA collective matmul"]
    assert {c["kind"] for c in one_node["collectives"]} == {"collective-permute"}
    text = said()
    assert "That is on one node of 8: compiled on a lent H100 for 8 nodes of" in text
    assert "the same option left the one all-gather in place" in text


def test_the_claims_fail_when_the_h100_program_flips():
    """The check can fail: a record with its permutes waiting for nothing (as the
    hand-written ring's H100 program does), its gather back, or (v5e) its blocks going
    one way only breaks the sentences."""
    import copy

    for target, flip in [
        ("h100:1x8", "in flight"),
        ("h100:1x8", "gather"),
        ("v5p:2x2x2", "in flight"),
        ("v5e:2x4", "one way"),
    ]:
        data = copy.deepcopy(DATA)
        p = overlap.find(target, "XLA collective matmul", data)
        if flip == "in flight":
            rows = p["loops"][0]["schedule"]
            p["loops"][0]["schedule"] = [r for r in rows if r[0] != "matmul"]
        elif flip == "gather":
            p["collectives"][0]["kind"] = "all-gather"
        else:
            for c in p["collectives"]:
                c["replica_groups"] = p["collectives"][0]["replica_groups"]
        with pytest.raises(AssertionError):
            xla_matmul_claims(data)


def test_a_chart_draws_one_loop_and_says_how_often_it_runs():
    import copy

    data = copy.deepcopy(DATA)
    p = overlap.find("h100:1x8", "XLA collective matmul", data)
    caption = overlap.chart("h100:1x8", "XLA collective matmul", data)
    assert "the body of the loop XLA made (it runs once per call)" in caption
    p["loops"].append(p["loops"][0])
    with pytest.raises(ValueError, match="2 loops hold collectives"):
        overlap.drawn(p)


def test_the_hide_table_is_the_formula_on_the_published_figures():
    model = DATA["model"]
    rows = overlap.hide_rows(DATA)
    assert {(h.chip, h.layer) for h in rows} == {
        (k, layer) for k in overlap.HIDE_TARGETS for layer in (1, 2)
    }
    for h in rows:
        p = overlap.find(h.target, "FSDP", DATA)
        n = 8
        assert p["mesh"] == {next(iter(p["mesh"])): n}
        # the width is the compiled program's: the gathered kernels' dtype
        gathers = [
            c
            for c in p["collectives"]
            if c["kind"] == "all-gather" and c["result_bytes"] >= 2**20
        ]
        assert {2 if c["dtype"] == "bf16" else 4 for c in gathers} == {h.width}
        link = cm.LINKS[h.chip].within
        peak = steptime.peak(h.chip, "bfloat16" if h.width == 2 else "float32")
        assert h.send_seconds == pytest.approx(
            7 / 8 * model["d"] * model["hidden"] * h.width / link
        )
        if h.layer == 2:
            rows_per_device = model["batch"] / n
            assert h.compute_seconds == pytest.approx(
                2 * rows_per_device * model["d"] * model["hidden"] / peak
            )
            # at rows_needed the two times are equal
            at = 2 * h.rows_needed * model["d"] * model["hidden"] / peak
            assert at == pytest.approx(h.send_seconds)
            assert h.hides == (rows_per_device >= h.rows_needed)
        else:
            assert not h.hides
    # what the prose says: at the compiled batch nothing hides
    assert not any(h.hides for h in rows)


def test_a_hide_row_hides_once_the_batch_is_large_enough():
    """The check can say yes: with 16 times the batch (512 rows per device) the H100 f32 gather hides."""
    import copy

    data = copy.deepcopy(DATA)
    data["model"]["batch"] = DATA["model"]["batch"] * 16
    h = next(h for h in overlap.hide_rows(data) if h.chip == "h100" and h.layer == 2)
    assert h.hides
