import itertools
from fractions import Fraction

import pytest

from docs_build import pipeline_chart
from snippets.training.pipeline_training import interleaved as il
from snippets.training.pipeline_training import schedule as sc

# (devices, chunks per device, microbatches); with v > 1, M is a multiple of S.
SIZES = [(1, 1, 1), (1, 3, 2), (2, 2, 2), (2, 2, 6), (3, 2, 9), (4, 1, 8), (4, 2, 4)]
SIZES += [(4, 2, 8), (4, 4, 8), (4, 3, 12), (8, 2, 16), (5, 1, 3)]


def jobs(table):
    return sorted((job, d) for (_, d), job in table.items())


def all_jobs(S, v, M):
    return [
        ((op, m, c), d)
        for d in range(S)
        for m in range(M)
        for c in range(v)
        for op in "FB"
    ]


@pytest.mark.parametrize(("S", "v", "M"), SIZES)
def test_every_job_once_inputs_first_and_the_formula(S, v, M):
    table = il.make_interleaved(S, v, M)
    il.check_interleaved(table, S, v, M)  # raises if a job is missing, twice or early
    assert jobs(table) == sorted(all_jobs(S, v, M))
    for (t, d), job in table.items():  # independent of check_interleaved
        needed = il.chunk_needs(job, d, S, v)
        if needed:
            (t_in,) = [u for (u, e), j in table.items() if (j, e) == needed]
            assert t_in < t
    slots = max(t for t, _ in table) + 1
    assert slots == 2 * (v * M + S - 1)
    idle = Fraction(slots * S - len(table), slots * S)
    assert idle == Fraction(S - 1, v * M + S - 1)
    assert il.hops(table, S, v) == (M * (2 * v * S - 2) if S > 1 else 0)


def test_one_chunk_is_1f1b():
    for S, M in [(4, 8), (3, 7), (8, 8)]:
        plain = sc.make_schedule("1f1b", S, M)
        assert il.make_interleaved(S, 1, M) == {k: (*j, 0) for k, j in plain.items()}
        assert il.held_chunks(il.make_interleaved(S, 1, M), S, 1) == sc.held(plain, S)


def test_the_order_follows_megatron():
    # Device 0 of 4, two chunks: chunk 0 for microbatches 0-3, chunk 1 for 0-3, then
    # chunk 0 for 4-7: warm-up 2 * (S - 1) + (v - 1) * S = 10 forwards, then a forward
    # and a backward in turn, backwards through chunk 1 first.
    order = il.interleaved_order(4, 2, 8, 0)
    assert [il.name(j) for j in order[:12]] == (
        [
            "F0c0",
            "F1c0",
            "F2c0",
            "F3c0",
            "F0c1",
            "F1c1",
            "F2c1",
            "F3c1",
            "F4c0",
            "F5c0",
            "F6c0",
            "B0c1",
        ]
    )
    assert [il.name(j) for j in il.interleaved_order(4, 2, 8, 3)[:7]] == (
        ["F0c0", "F1c0", "F2c0", "F3c0", "F0c1", "B0c1", "F1c1"]
    )
    # With M == S Megatron runs every forward first.
    order = il.interleaved_order(2, 2, 2, 1)
    assert [op for op, _, _ in order] == ["F"] * 4 + ["B"] * 4


def as_early_as_possible(orders, S, v):
    """Start steps by relaxation, without run_orders: each job one step after the
    device's previous job and after the job it needs."""
    start = {(job, d): 0 for d, order in enumerate(orders) for job in order}
    changed = True
    while changed:
        changed = False
        for d, order in enumerate(orders):
            for i, job in enumerate(order):
                after = [start[order[i - 1], d] + 1] if i else [0]
                needed = il.chunk_needs(job, d, S, v)
                after += [start[needed] + 1] if needed else []
                if max(after) > start[job, d]:
                    start[job, d], changed = max(after), True
    return start


@pytest.mark.parametrize(("S", "v", "M"), SIZES)
def test_the_table_runs_each_job_at_its_earliest_step(S, v, M):
    orders = [il.interleaved_order(S, v, M, d) for d in range(S)]
    start = as_early_as_possible(orders, S, v)
    assert il.make_interleaved(S, v, M) == {
        (t, d): job for (job, d), t in start.items()
    }


def shortest(S, v, M):
    """Brute force: the fewest steps of any schedule, any order, one job per device
    per step, by breadth-first search over the sets of jobs done."""
    every = all_jobs(S, v, M)
    index = {j: i for i, j in enumerate(every)}
    needs = [il.chunk_needs(job, d, S, v) for job, d in every]
    needs = [None if n is None else index[n] for n in needs]
    frontier, seen, steps = {0}, {0}, 0
    while (1 << len(every)) - 1 not in frontier:
        after = set()
        for done in frontier:
            choices = [
                [None]
                + [
                    i
                    for i, (_, e) in enumerate(every)
                    if e == d
                    and not done >> i & 1
                    and (needs[i] is None or done >> needs[i] & 1)
                ]
                for d in range(S)
            ]
            for pick in itertools.product(*choices):
                state = done
                for i in pick:
                    state |= 0 if i is None else 1 << i
                if state not in seen:
                    seen.add(state)
                    after.add(state)
        frontier, steps = after, steps + 1
    return steps


@pytest.mark.parametrize(("S", "v", "M"), [(2, 1, 2), (2, 2, 2), (2, 2, 4), (2, 3, 2)])
def test_no_schedule_is_shorter_in_small_cases(S, v, M):
    table = il.make_interleaved(S, v, M)
    assert max(t for t, _ in table) + 1 == shortest(S, v, M)


def test_the_page_prints_the_costs(capsys):
    assert il.show_interleaved() == il.make_interleaved(4, 2, 8)
    il.show_costs()
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "v  chunk-slots  full steps  idle  (S-1)/(vM+S-1)  held per device   hops/mb",
        "1           22          22  3/11            3/11  [4, 4, 3, 2]            6",
        "2           38          19  3/19            3/19  [11, 10, 8, 6]         14",
        "4           70        35/2  3/35            3/35  [19, 18, 16, 14]       30",
    ]


def test_costs_match_the_counts():
    for v in (1, 2, 4):
        r = il.measure(4, v, 8)
        assert r["idle"] == r["formula"] == Fraction(3, 8 * v + 3)
        assert r["hops per microbatch"] == 2 * v * 4 - 2
        assert r["full steps"] == Fraction(2 * (8 * v + 3), v)
    # Device 0 keeps its warm-up forwards plus one: 2 * (S - 1) + (v - 1) * S + 1.
    assert [il.measure(4, v, 8)["held"][0] for v in (2, 4)] == [11, 19]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((4, 2, 6), "groups of 4: 6 is not a multiple of 4; use 8, say"),
        ((4, 2, 3), "3 is not a multiple of 4; use 4, say"),
        ((4, 0, 8), "whole number of chunks per device, at least 1; got 0"),
        ((0, 2, 8), "whole number of devices, at least 1; got 0"),
        ((4, 2, 0), "whole number of microbatches, at least 1; got 0"),
        ((4, 2.0, 8), "chunks per device, at least 1; got 2.0"),
        ((4, True, 8), "chunks per device, at least 1; got True"),
    ],
)
def test_bad_counts_are_refused(args, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        il.make_interleaved(*args)


def test_check_interleaved_says_what_is_wrong(capsys):
    from pathlib import Path

    page = Path(__file__).resolve().parents[3] / "docs/training/pipeline-training.md"
    said = " ".join(page.read_text().split())
    assert "(eight microbatches, not six, for four devices)" in said
    il.bad_interleaved()
    assert capsys.readouterr().out.splitlines() == [
        "ValueError: the interleaved order runs microbatches in groups of 4: 6 is not a "
        "multiple of 4; use 8, say.",
        "ValueError: an interleaved schedule needs a whole number of chunks per device, "
        "at least 1; got 0.",
    ]
    table = il.make_interleaved(4, 2, 8)
    first = min(t for t, d in table if d == 1)  # device 1 starts F0c0 one step early
    table[first - 1, 1] = table.pop((first, 1))
    with pytest.raises(
        ValueError,
        match=r"device 1 runs F0c0 at step 0, but its input, F0c0 on device 0, is "
        r"only done at step 0: run it later\.",
    ):
        il.check_interleaved(table, 4, 2, 8)
    good = il.make_interleaved(2, 2, 2)
    missing = dict(good)
    del missing[max(missing)]
    with pytest.raises(ValueError, match="never runs B1c0"):
        il.check_interleaved(missing, 2, 2, 2)
    with pytest.raises(ValueError, match="device 0 runs F0c0 twice"):
        il.check_interleaved({**good, (99, 0): ("F", 0, 0)}, 2, 2, 2)
    with pytest.raises(ValueError, match="no such slot"):
        il.check_interleaved({**good, (0, 2): ("F", 0, 0)}, 2, 2, 2)
    with pytest.raises(ValueError, match=r"\('F', 0, 2\) is not a job"):
        il.check_interleaved({**good, (50, 0): ("F", 0, 2)}, 2, 2, 2)
    with pytest.raises(ValueError, match=r"\('F', 0\) is not a job"):
        il.check_interleaved({**good, (50, 0): ("F", 0)}, 2, 2, 2)
    # The last chunk's backward needs its own forward: swap them on device 1.
    t_f = next(t for (t, d), j in good.items() if d == 1 and j == ("F", 0, 1))
    t_b = next(t for (t, d), j in good.items() if d == 1 and j == ("B", 0, 1))
    swapped = {**good, (t_f, 1): ("B", 0, 1), (t_b, 1): ("F", 0, 1)}
    with pytest.raises(ValueError, match=r"runs B0c1 at step .*F0c1 on device 1"):
        il.check_interleaved(swapped, 2, 2, 2)


def test_an_order_that_waits_forever_is_refused():
    with pytest.raises(
        ValueError, match=r"device 0 waits forever for the input of \('B', 0\)"
    ):
        sc.run_orders(
            [[("B", 0), ("F", 0)], [("F", 0), ("B", 0)]],
            lambda job, s: sc.stage_needs(job, s, 2),
        )


def test_the_chart_shows_chunks():
    table = il.make_interleaved(4, 2, 8)
    svg, text = pipeline_chart.draw(table, 4, "title")
    assert svg.count("<rect") == len(table) == 128
    for op, m, c in table.values():
        assert f">{op}{m}c{c}</text>" in svg
    assert "<rect" in svg and "</title></rect>" not in svg  # no tooltips: a light page
    lines = text.splitlines()
    assert lines[1] == "4 devices across, 38 steps; 24 of 152 slots idle"
    assert lines[5].startswith("device 3: (idle 3) F0c0 F1c0 F2c0 F3c0 F0c1 B0c1")
    assert "F3c1: microbatch 3 through chunk 1" in svg
    # Without chunks the chart is as before: stages, 26 px a step.
    svg2, text2 = pipeline_chart.draw(sc.make_schedule("1f1b", 4, 8), 4, "t")
    assert "chunk" not in svg2 and "device" not in text2
    assert f'width="{58 + 22 * 26 + 8}"' in svg2
    assert f'width="{58 + 38 * 34 + 8}"' in svg
