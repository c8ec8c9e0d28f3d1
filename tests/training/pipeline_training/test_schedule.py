from fractions import Fraction

import pytest

from docs_build import pipeline_chart
from snippets.training.pipeline_training import schedule as sc

SIZES = [(1, 1), (1, 5), (4, 1), (4, 8), (8, 3), (8, 8), (8, 64), (3, 7)]


@pytest.mark.parametrize("kind", ["gpipe", "1f1b"])
@pytest.mark.parametrize(("stages", "micro"), SIZES)
def test_every_schedule_is_valid_and_idles_the_formula(kind, stages, micro):
    table = sc.make_schedule(kind, stages, micro)
    sc.check_schedule(table, stages, micro)  # raises if a job is missing or early
    steps = max(t for t, _ in table) + 1
    assert steps == 2 * (micro + stages - 1)
    assert sc.idle_share(table, stages) == Fraction(stages - 1, micro + stages - 1)


@pytest.mark.parametrize(("stages", "micro"), SIZES)
def test_1f1b_holds_at_most_the_stages_gpipe_all_microbatches(stages, micro):
    assert max(sc.held(sc.make_schedule("1f1b", stages, micro), stages)) == min(
        stages, micro
    )
    assert sc.held(sc.make_schedule("gpipe", stages, micro), stages) == [micro] * stages


def test_1f1b_alternates_after_the_warmup():
    table = sc.make_schedule("1f1b", 4, 8)
    stage0 = [table[t, 0] for t in sorted(t for t, s in table if s == 0)]
    assert stage0[:4] == [("F", 0), ("F", 1), ("F", 2), ("F", 3)]
    assert stage0[4:8] == [("B", 0), ("F", 4), ("B", 1), ("F", 5)]
    # GPipe runs no backward before the last forward.
    gpipe = sc.make_schedule("gpipe", 4, 8)
    last_f = max(t for t, (op, _) in gpipe.items() if op == "F")
    first_b = min(t for t, (op, _) in gpipe.items() if op == "B")
    assert last_f < first_b


def test_the_page_prints_both_tables_and_what_they_hold(capsys):
    gpipe, one = sc.show_schedules()
    sc.show_held(gpipe, one)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "GPipe"
    assert (
        lines[2]
        == "stage 0 F0 F1 F2 F3 F4 F5 F6 F7  ·  ·  ·  ·  ·  · B0 B1 B2 B3 B4 B5 B6 B7"
    )
    assert lines[6] == "1F1B"
    assert (
        lines[8]
        == "stage 0 F0 F1 F2 F3  ·  ·  · B0 F4 B1 F5 B2 F6 B3 F7 B4  · B5  · B6  · B7"
    )
    assert lines[-2:] == [
        "activations held per stage, GPipe: [8, 8, 8, 8]",
        "activations held per stage, 1F1B:  [4, 4, 3, 2]",
    ]


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "4"])
def test_counts_are_checked(bad):
    with pytest.raises(ValueError, match="a schedule needs a whole number of stages"):
        sc.make_schedule("1f1b", bad, 4)
    with pytest.raises(ValueError, match="whole number of microbatches, at least 1"):
        sc.make_schedule("gpipe", 4, bad)


def test_an_unknown_schedule_is_refused():
    with pytest.raises(
        ValueError, match="unknown schedule 'interleaved': use 'gpipe' or '1f1b'"
    ):
        sc.make_schedule("interleaved", 4, 4)


def test_check_schedule_says_what_is_wrong(capsys):
    sc.bad_schedules()
    assert capsys.readouterr().out.splitlines() == [
        "ValueError: a schedule needs a whole number of microbatches, at least 1; got 0.",
        "ValueError: stage 3 runs F0 at step 0, but its input, F0 on stage 2, is only "
        "done at step 2: run it later.",
    ]
    good = sc.make_schedule("1f1b", 2, 2)
    missing = dict(good)
    del missing[max(missing)]
    with pytest.raises(ValueError, match="never runs B1"):
        sc.check_schedule(missing, 2, 2)
    twice = dict(good)
    twice[99, 0] = ("F", 0)
    with pytest.raises(ValueError, match="stage 0 runs F0 twice"):
        sc.check_schedule(twice, 2, 2)
    early = dict(good)  # stage 0's backward of 0 before stage 1's
    t_b = next(t for t, s in early if s == 0 and early[t, s] == ("B", 0))
    early[2, 0] = early.pop((t_b, 0))
    with pytest.raises(
        ValueError, match="stage 0 runs B0 at step 2, but its input, B0 on stage 1"
    ):
        sc.check_schedule(early, 2, 2)
    with pytest.raises(ValueError, match="no such slot"):
        sc.check_schedule({**good, (0, 5): ("F", 0)}, 2, 2)
    with pytest.raises(ValueError, match="X0 is not a job"):
        sc.check_schedule({**good, (50, 0): ("X", 0)}, 2, 2)


def test_the_chart_draws_the_table():
    table = sc.make_schedule("1f1b", 4, 8)
    svg, text = pipeline_chart.draw(table, 4, "title")
    # One box per job, labelled with it, in the stage's colour, and nothing else boxed.
    assert svg.count("<rect") == len(table) == 64
    for (t, s), (op, m) in table.items():
        assert f"<title>step {t}, stage {s}: " in svg
        assert f">{op}{m}</text>" in svg
    lines = text.splitlines()
    assert lines[1] == "4 stages across, 22 steps; 24 of 88 slots idle"
    assert lines[2] == (
        "stage 0: F0 F1 F2 F3 (idle 3) B0 F4 B1 F5 B2 F6 B3 F7 B4 (idle 1) B5 (idle 1) "
        "B6 (idle 1) B7"
    )
    assert 'font-size="11"' in svg and "pipeline-chart" in svg


def test_the_chart_refuses_what_is_not_a_schedule():
    with pytest.raises(ValueError, match="at least one job"):
        pipeline_chart.draw({}, 4, "t")
    with pytest.raises(ValueError, match="outside a chart of 4 stages"):
        pipeline_chart.draw({(0, 4): ("F", 0)}, 4, "t")
    with pytest.raises(ValueError, match="a job is"):
        pipeline_chart.draw({(0, 0): ("X", 0)}, 4, "t")
