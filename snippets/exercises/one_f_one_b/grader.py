"""The grader of one_f_one_b: its hidden cases and what it checks.

The exercise practises Pipeline training (training/pipeline-training.md);
its statement is docs/exercises/one_f_one_b.md.
"""

from __future__ import annotations

from snippets.exercises.grading import Case, Exercise, Problems, kind
from snippets.training.pipeline_training.schedule import check_schedule, make_schedule


def one_f_one_b_cases() -> list[Case]:
    cases = []
    for stages, micro in [(4, 8), (2, 2), (8, 3), (1, 4), (5, 1), (3, 10)]:
        cases.append(
            Case(
                about=f"num_stages={stages}, num_microbatches={micro}",
                args=lambda s=stages, m=micro: (s, m),
                check=lambda got, a: schedule_problems(got, *a),
            )
        )
    for stages, micro in [(0, 4), (4, 0), (2.5, 4)]:
        cases.append(
            Case(
                about=f"num_stages={stages}, num_microbatches={micro}: should raise",
                args=lambda s=stages, m=micro: (s, m),
                raises=ValueError,
            )
        )
    return cases


def schedule_problems(got, num_stages: int, num_microbatches: int) -> Problems:
    if not isinstance(got, dict):
        return [f"it returned {kind(got)}; the statement asks for a dict."]
    try:
        check_schedule(got, num_stages, num_microbatches)
    except (ValueError, TypeError, KeyError) as err:
        problems = [f"not a training schedule: {err}"]
        if "never runs" in str(err) and len(got) < 2 * num_stages * num_microbatches:
            problems.append(
                "A slot holds one job: if two jobs were put in the same (step, stage), "
                "the second replaced the first. A stage does one thing per step."
            )
        if "is not a job" in str(err) or "no such slot" in str(err):
            problems.append("Keys are (step, stage) and values (op, microbatch).")
        return problems
    want = make_schedule("1f1b", num_stages, num_microbatches)
    if got == want:
        return []
    gpipe = make_schedule("gpipe", num_stages, num_microbatches)
    if got == gpipe:
        return [
            "this is GPipe: every forward, then every backward, so stage 0 keeps all "
            f"{num_microbatches} microbatches. 1F1B starts backwards after "
            "num_stages - 1 - stage forwards."
        ]
    first = min(k for k in set(got) | set(want) if got.get(k) != want.get(k))
    return [
        f"a valid schedule, but not 1F1B's: at step {first[0]}, stage {first[1]} "
        f"should run {want.get(first, 'nothing')}, not {got.get(first, 'nothing')}."
    ]


EXERCISE = Exercise(
    name="one_f_one_b",
    title="The 1F1B schedule",
    params=("num_stages", "num_microbatches"),
    practises="training/pipeline-training.md",
    solution="snippets/exercises/one_f_one_b/solution.py:solution",
    cases=one_f_one_b_cases,
)
