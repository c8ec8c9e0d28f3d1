"""The pipeline-training page's compiled evidence (docs_build/compiled/pages.py
pipeline_training_table and pipeline_training_said): GPipe and 1F1B on every 8-device target,
read from results/{cpu,tpu,gpu}.json, and the page's claims about them."""

import copy
from pathlib import Path

import pytest

from docs_build.compiled import advanced, pages
from docs_build.compiled.results import CompiledResultsError, results

PAGE = (
    Path(__file__).resolve().parents[3] / "docs" / "training" / "pipeline-training.md"
)
DATA = results()
TARGETS = DATA["advanced"]["targets"]
PROGRAMS = pages.pipeline_training_programs()


def compiled(target: str, schedule: str) -> dict:
    return pages.advanced_program(target, PROGRAMS[schedule], DATA)


def kind(p: dict, name: str) -> list[dict]:
    return [c for c in p["collectives"] if c["kind"] == name]


def test_the_page_has_the_markers_and_a_program_for_each_schedule():
    text = PAGE.read_text()
    assert pages.PIPELINE_TRAINING_TABLE in text
    assert pages.PIPELINE_TRAINING_SAID in text
    assert list(PROGRAMS) == ["GPipe", "1F1B"]
    assert set(PROGRAMS.values()) <= set(advanced.PROGRAMS)


def test_the_table_reads_each_schedules_program_on_each_target():
    """Each cell is its own program's: give every program other temporaries and see them."""
    data = copy.deepcopy(DATA)
    wanted = set(PROGRAMS.values())
    n = 0
    for p in data["advanced"]["programs"]:
        if p["strategy"] in wanted:
            n += 1
            p["memory"]["temp_bytes"] = n * pages.MIB
    table = pages.pipeline_training_table(data)
    assert n == 2 * len(TARGETS)
    for i in range(1, n + 1):
        assert table.count(f"| {i:,}.0 MiB |") == 1
    for target in TARGETS:
        for schedule in PROGRAMS:
            assert f"| {target} | {schedule} | " in table


def test_a_missing_program_stops_the_table():
    data = copy.deepcopy(DATA)
    data["advanced"]["programs"] = [
        p for p in data["advanced"]["programs"] if p["strategy"] != PROGRAMS["1F1B"]
    ]
    with pytest.raises(CompiledResultsError, match="no compiled program"):
        pages.pipeline_training_table(data)


def test_permutes_that_run_unequally_stop_the_table():
    p = copy.deepcopy(compiled(TARGETS[0], "GPipe"))
    kind(p, "collective-permute")[0]["runs"] += 1
    with pytest.raises(CompiledResultsError, match="same number of times"):
        pages._permutes(p)


def test_the_schedules_step_count_and_buffers_are_the_tables():
    from snippets.training.pipeline_training.schedule import held, make_schedule

    for schedule, kind_name in advanced.PIPELINE_SCHEDULES.items():
        extra = compiled(TARGETS[0], schedule)["extra"]
        table = make_schedule(kind_name, 8, extra["microbatches"])
        assert extra["steps"] == max(step for step, _ in table) + 1
        assert extra["held"] == max(held(table, 8))
        assert extra["buffer_bytes"] == 2 * extra["held"] * extra["microbatch_bytes"]


def test_every_step_sends_both_ways_under_either_schedule():
    """The page: the loop sends a block forwards and one backwards at every step, idle or
    not, so on every backend the two schedules send the same bytes; the loss's all-reduce
    of 4 bytes is the one other collective."""
    for target in TARGETS:
        gpipe, one_f_one_b = compiled(target, "GPipe"), compiled(target, "1F1B")
        for p in (gpipe, one_f_one_b):
            assert {c["runs"] for c in kind(p, "collective-permute")} == {
                p["extra"]["steps"]
            }
            (loss,) = kind(p, "all-reduce")
            assert loss["runs"] == 1 and loss["result_bytes"] == 4
            assert set(p["summary"]) == {"collective-permute", "all-reduce"}
        assert gpipe["summary"] == one_f_one_b["summary"], target


def sent(p: dict) -> float:
    return sum(c["wire_bytes"] * c["runs"] for c in kind(p, "collective-permute"))


def test_how_each_backend_sends_is_what_the_page_says():
    text = " ".join(PAGE.read_text().split())
    for said in [
        "four synchronous transfers a step",
        "two transfers, one of them asynchronous",
        "convert the forward block to bfloat16 before sending it and keep the gradients "
        "in float32, so they send three quarters of the others' bytes",
    ]:
        assert said in text
    for schedule in PROGRAMS:
        by_target = {t: compiled(t, schedule) for t in TARGETS}
        forms = {
            t: sorted(c["form"] for c in kind(p, "collective-permute"))
            for t, p in by_target.items()
        }
        # CPU: blocks and numbers apart, four synchronous transfers a step
        assert forms["cpu"] == ["sync"] * 4
        assert all(
            len(c["shapes"]) == 1 for c in kind(by_target["cpu"], "collective-permute")
        )
        # H100: a block and its number together, two transfers, one asynchronous
        h100 = kind(by_target["h100:1x8"], "collective-permute")
        assert forms["h100:1x8"] == ["async", "sync"]
        assert all(len(c["shapes"]) == 2 for c in h100)
        for target, p in by_target.items():
            dtypes = pages.block_dtypes(p)
            tpu = target in ("v5e:2x4", "v5p:2x2x2")
            assert dtypes == {"forwards": "bf16" if tpu else "f32", "backwards": "f32"}
            if tpu:  # four asynchronous transfers, three quarters of the others' bytes
                assert forms[target] == ["async"] * 4
                assert sent(p) / sent(by_target["cpu"]) == pytest.approx(0.75, abs=1e-4)
            else:
                assert sent(p) == sent(by_target["cpu"])
            extra = p["extra"]
            # each step: two blocks of a microbatch and two microbatch numbers
            full = extra["steps"] * 2 * (extra["microbatch_bytes"] + 4)
            assert sent(p) == (full * 0.75 if tpu else full) + (
                extra["steps"] * 2 if tpu else 0
            )


def test_what_the_page_says_about_the_temporaries_holds():
    said = pages.pipeline_training_said()
    for target in TARGETS:
        gpipe, one_f_one_b = compiled(target, "GPipe"), compiled(target, "1F1B")
        assert one_f_one_b["memory"]["temp_bytes"] < gpipe["memory"]["temp_bytes"]
        gap, formula = pages.pipeline_training_gap(target)
        assert f"{gap / pages.MIB:,.1f} MiB" in said and target in said
        if target in ("cpu", "h100:1x8"):
            assert abs(gap - formula) <= 1e-4 * formula
        elif target == "v5p:2x2x2":
            assert abs(gap - formula) <= 0.01 * formula
        else:  # v5e: temporaries below GPipe's two buffers alone
            assert target == "v5e:2x4"
            assert gpipe["memory"]["temp_bytes"] < gpipe["extra"]["buffer_bytes"]
            assert abs(gap - formula) > 0.01 * formula  # why the page says it apart
    text = " ".join(PAGE.read_text().split())
    assert "On every backend 1F1B's temporaries are below GPipe's" in text
    assert (
        "the H100 the difference is the buffers' within 0.01 %, on v5p within 1 %"
        in text
    )


def test_the_sizes_the_page_names_are_the_compiled_ones():
    text = " ".join(PAGE.read_text().split())
    extra = compiled(TARGETS[0], "GPipe")["extra"]
    model = DATA["model"]
    assert (
        f"(width {model['d']}, hidden {model['hidden']}) and the batch in "
        f"{extra['microbatches']} microbatches of {extra['rows']} rows"
    ) in text
    assert TARGETS == [
        "cpu",
        "v5e:2x4",
        "v5p:2x2x2",
        "h100:1x8",
    ]  # "two TPU topologies"
    assert all(compiled(t, "GPipe")["mesh"] == {"stage": 8} for t in TARGETS)
