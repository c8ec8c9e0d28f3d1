"""The grader of gpipe_schedule: its hidden cases and what it checks.

The exercise practises Pipeline parallelism (training/pipeline.md);
its statement is docs/exercises/gpipe_schedule.md.
"""

from __future__ import annotations

import numpy as np

from snippets.exercises.grading import (
    Case,
    Exercise,
    Problems,
    array_problems,
    kind,
)


def gpipe_schedule_cases() -> list[Case]:
    cases = []
    # 40,000 microbatches: more than a narrow integer type (int8, int16) can number.
    for stages, micro in [(4, 4), (2, 40_000), (8, 1), (3, 5)]:
        step = np.arange(micro + stages - 1)[None, :] - np.arange(stages)[:, None]
        expected = np.where((step >= 0) & (step < micro), step, -1)
        cases.append(
            Case(
                about=f"num_stages={stages}, num_microbatches={micro}",
                args=lambda s=stages, m=micro: (s, m),
                check=lambda got, a, e=expected: schedule_problems(got, e),
            )
        )
    # Every way the page's rule can be broken: too few stages, too few microbatches, and a
    # count that is not a whole number (2.5 stages would give half a row).
    for stages, micro in [(0, 4), (4, 0), (2.5, 4)]:
        cases.append(
            Case(
                about=f"num_stages={stages}, num_microbatches={micro}: should raise",
                args=lambda s=stages, m=micro: (s, m),
                raises=ValueError,
            )
        )
    return cases


def schedule_problems(got, expected: np.ndarray) -> Problems:
    if got is not None and not isinstance(got, np.ndarray):
        return [
            f"it returned {kind(got)}; the statement asks for a NumPy array: "
            "np.array(...) of it, with an integer dtype."
        ]
    dtype = np.asarray(got).dtype
    if np.issubdtype(dtype, np.integer) and np.iinfo(dtype).max < expected.max():
        return [
            f"the entries are {dtype}, which holds numbers up to {np.iinfo(dtype).max} "
            f"only, and this schedule numbers microbatches up to {expected.max()}: use "
            "an integer type wide enough for any count, such as int (int64)."
        ]
    problems = array_problems(got, expected, exact=True)
    if not problems and not np.issubdtype(np.asarray(got).dtype, np.integer):
        return [
            f"the entries are {np.asarray(got).dtype}, not integers: they number "
            "microbatches, so return an integer array (e.g. .astype(int))."
        ]
    stages, steps = expected.shape
    if problems and np.shape(got) == (stages, steps - stages + 1):
        problems.append(
            "One column per microbatch is too few: the last microbatch enters "
            "stage 0 at the last of those steps and still has to pass through the "
            f"other {stages - 1} stage(s)."
        )
    return problems


EXERCISE = Exercise(
    name="gpipe_schedule",
    title="The GPipe schedule and its bubble",
    params=("num_stages", "num_microbatches"),
    practises="training/pipeline.md",
    solution="snippets/exercises/gpipe_schedule/solution.py:solution",
    cases=gpipe_schedule_cases,
)
