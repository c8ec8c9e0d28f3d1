"""The grader of mesh_shape_for: its hidden cases and what it checks.

The exercise practises Choosing a strategy (training/choosing.md);
its statement is docs/exercises/mesh_shape_for.md.
"""

from __future__ import annotations

from snippets.exercises.grading import (
    Case,
    Exercise,
    Problems,
    kind,
)

GB = 2**30


def mesh_shape_for_cases() -> list[Case]:
    cases = []
    for devices, state, budget, expected in [
        (8, 4 * GB, 16 * GB, (8, 1)),
        (8, 40 * GB, 16 * GB, (2, 4)),
        (8, 100 * GB, 16 * GB, (1, 8)),
        (12, 40 * GB, 16 * GB, (4, 3)),  # model axes that are not powers of two
        (12, 90 * GB, 16 * GB, (2, 6)),
        (6, 30 * GB, 16 * GB, (3, 2)),
        (6, 50 * GB, 16 * GB, (1, 6)),
        (8, 32 * GB, 16 * GB, (4, 2)),  # the budget filled exactly: it fits
        (8, 32 * GB + 1, 16 * GB, (2, 4)),  # half a byte over on 2: not rounded away
    ]:
        cases.append(
            Case(
                about=f"{devices} devices, {gib(state)} of state, {gib(budget)} each",
                args=lambda d=devices, s=state, b=budget: (d, s, b),
                check=lambda got, a, e=expected: shape_problems(got, e, a),
            )
        )
    cases.append(
        Case(
            about="8 devices, 200 GiB of state, 16 GiB each: should raise",
            args=lambda: (8, 200 * GB, 16 * GB),
            raises=ValueError,
        )
    )
    return cases


def gib(n: int) -> str:
    """A byte count as the cases describe it: '32 GiB', or '32 GiB + 1 byte'."""
    whole, rest = divmod(n, GB)
    return f"{whole} GiB" + (f" + {rest} byte{'s' if rest > 1 else ''}" if rest else "")


def shape_problems(got, expected: tuple[int, int], args: tuple) -> Problems:
    try:
        shape = tuple(int(v) for v in got)
    except (TypeError, ValueError):
        return [f"it returned {kind(got)}; return a tuple (data, model)."]
    if shape != expected:
        return [
            f"wrong mesh shape: expected {expected}, got {shape}."
            + smaller(shape, expected, args)
        ]
    if not isinstance(got, tuple):
        return [
            f"it returned {kind(got)} {list(shape)}; the statement asks for the tuple "
            f"(data, model): return {shape}."
        ]
    if others := sorted({type(v).__name__ for v in got if type(v) is not int}):
        return [
            f"the sizes are right, but they are {', '.join(others)}, not ints: return "
            "whole numbers, (data, model) as Python ints."
        ]
    return []


def smaller(shape: tuple[int, ...], expected: tuple[int, int], args: tuple) -> str:
    """When a mesh shape is whole but its model axis larger than needed: which smaller
    one fits, and, if that one is not a power of two, that it counts too."""
    devices, state, budget = args
    model = expected[1]
    if len(shape) != 2 or shape[0] * shape[1] != devices or shape[1] <= model:
        return ""
    why = (
        f" A smaller model axis fits: model = {model} divides {devices} devices and "
        f"leaves each device {state / model / GB:.3g} GiB of the {gib(state)} of "
        f"state, within its {gib(budget)}."
    )
    if model & (model - 1):
        why += (
            f" Try every divisor of num_devices, not only powers of two: {model} is a "
            f"divisor of {devices}."
        )
    return why


EXERCISE = Exercise(
    name="mesh_shape_for",
    title="A mesh shape for a memory budget",
    params=("num_devices", "state_bytes", "budget_bytes"),
    practises="training/choosing.md",
    solution="snippets/exercises/mesh_shape_for/solution.py:solution",
    cases=mesh_shape_for_cases,
)
