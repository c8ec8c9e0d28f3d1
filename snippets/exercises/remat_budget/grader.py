"""The grader of remat_budget: its hidden cases and what it checks.

The exercise practises Activation memory and remat (advanced/remat.md);
its statement is docs/exercises/remat_budget.md.
"""

from __future__ import annotations

from snippets.exercises.grading import (
    Case,
    Exercise,
    Problems,
    kind,
)

# Temporaries (bytes per device) and FLOPs of one step under six policies, shaped like the
# remat page's CPU table: keeping more costs memory and saves recompute, but not in the
# same order (dots keeps the most and recomputes the least; offload keeps as much as names
# on the device, yet recomputes a little less).
SIX = {
    False: (219_088, 100_000),
    True: (107_680, 119_800),
    "dots": (142_096, 105_300),
    "dots_no_batch": (127_168, 106_800),
    "names": (115_896, 114_200),
    "offload": (115_896, 113_900),
}
# More kept is not always less recomputed: "big" keeps the most that fits 100 bytes.
THREE = {"small": (60, 130), "big": (95, 120), "middle": (80, 110)}
# Two policies recompute the same: the one with fewer temporaries wins.
TIED = {"a": (90, 200), "b": (70, 200), "c": (50, 260)}


def remat_budget_cases() -> list[Case]:
    cases = []
    for table, budget, expected in [
        (SIX, 130_000, "dots_no_batch"),
        (SIX, 250_000, False),
        (SIX, 150_000, "dots"),
        (SIX, 120_000, "offload"),
        (SIX, 107_680, True),  # the budget filled exactly: it fits
        (THREE, 100, "middle"),
        (TIED, 100, "b"),
    ]:
        cases.append(
            Case(
                about=f"{len(table)} policies {list(table)}, a budget of {budget:,} bytes",
                args=lambda t=table, b=budget: (dict(t), b),
                check=lambda got, a, e=expected: policy_problems(got, e, *a),
            )
        )
    cases.append(
        Case(
            about=f"{len(SIX)} policies {list(SIX)}, a budget of 100,000 bytes: should "
            "raise",
            args=lambda: (dict(SIX), 100_000),
            raises=ValueError,
        )
    )
    return cases


def policy_problems(got, expected, measured: dict, budget: int) -> Problems:
    if not any(
        got is key or (got == key and type(got) is type(key)) for key in measured
    ):
        return [
            f"it returned {kind(got)} {got!r}, not one of the table's keys "
            f"{list(measured)}: return the key itself."
        ]
    if got == expected and type(got) is type(expected):
        return []
    (temp, flops), (want_temp, want_flops) = measured[got], measured[expected]
    said = f"wrong policy: expected {expected!r}, got {got!r}."
    if temp > budget:
        return [
            f"{said} Its temporaries, {temp:,} bytes, exceed the budget of {budget:,} "
            "bytes."
        ]
    if flops > want_flops:
        return [
            f"{said} {expected!r} fits too ({want_temp:,} bytes) and computes less: "
            f"{want_flops:,} FLOPs against {flops:,}."
        ]
    return [
        f"{said} Both compute {flops:,} FLOPs; on a tie, take the one with fewer "
        f"temporaries: {want_temp:,} bytes against {temp:,}."
    ]


EXERCISE = Exercise(
    name="remat_budget",
    title="A remat policy for a memory budget",
    params=("measured", "budget_bytes"),
    practises="advanced/remat.md",
    solution="snippets/exercises/remat_budget/solution.py:solution",
    cases=remat_budget_cases,
)
