"""The grader of process_rows: its hidden cases and what it checks.

The exercise practises Beyond one host (training/multi-host.md);
its statement is docs/exercises/process_rows.md.
"""

from __future__ import annotations

import jax
import numpy as np
from jax import P
from jax.sharding import NamedSharding

from snippets.exercises.common import (
    make_mesh,
)
from snippets.exercises.grading import (
    Case,
    Exercise,
    Problems,
    kind,
)


def process_rows_cases() -> list[Case]:
    def sharding(order, shape, names, spec):
        devices = np.asarray(jax.devices())[list(order)]
        return NamedSharding(make_mesh(shape, names, devices=devices), spec)

    line, inter = range(8), [0, 4, 1, 5, 2, 6, 3, 7]
    setups = [
        (
            "8 devices in order, P('data'), rows 16, process of devices 0-3",
            (line, (8,), ("data",), P("data")),
            (16, 4),
            range(4),
        ),
        (
            "8 devices in order, P('data'), rows 16, process of devices 4-7",
            (line, (8,), ("data",), P("data")),
            (16, 4),
            range(4, 8),
        ),
        (
            "mesh devices ordered 0,4,1,5,2,6,3,7, P('data'), rows 16, devices 0-3",
            (inter, (8,), ("data",), P("data")),
            (16, 4),
            range(4),
        ),
        (
            "a 2 x 4 mesh {'data', 'model'}, P('data'), rows 8, devices 0-3",
            (line, (2, 4), ("data", "model"), P("data")),
            (8, 2),
            range(4),
        ),
        (
            "a 4 x 2 mesh {'data', 'model'} ordered 0,4,1,5,..., P('data'), rows 8, devices 0-3",
            (inter, (4, 2), ("data", "model"), P("data")),
            (8, 2),
            range(4),
        ),
        (
            "8 devices in order, P('data'), rows 16, process of devices 6, 2, 4, 0 "
            "(listed out of order)",
            (line, (8,), ("data",), P("data")),
            (16, 4),
            [6, 2, 4, 0],
        ),
    ]
    cases = []
    for about, layout, shape, owned in setups:

        def args(layout=layout, shape=shape, owned=owned):
            devices = [jax.devices()[i] for i in owned]
            return sharding(*layout), shape, devices

        expected = sorted(
            {
                row
                for device, index in sharding(*layout)
                .devices_indices_map(shape)
                .items()
                if device.id in owned
                for row in range(shape[0])[index[0]]
            }
        )
        cases.append(
            Case(
                about=about,
                args=args,
                check=lambda got, a, e=expected: rows_problems(got, e),
            )
        )
    return cases


def rows_problems(got, expected: list[int]) -> Problems:
    try:
        rows = [int(r) for r in got]
    except (TypeError, ValueError):
        return [f"it returned {kind(got)}; return a list of row numbers."]
    if rows != sorted(set(rows)):
        return [f"list each row once, in increasing order; got {rows}."]
    if rows != expected:
        return [f"wrong rows: expected {expected}, got {rows}."]
    if not isinstance(got, list):
        return [
            f"it returned {kind(got)} of the right rows; the statement asks for a "
            "list: list(...) of them, each an int."
        ]
    if others := sorted({type(r).__name__ for r in got if type(r) is not int}):
        return [
            f"the rows are right, but they are {', '.join(others)}, not Python ints: "
            "convert each with int(...), as the statement asks for a list of ints."
        ]
    return []


EXERCISE = Exercise(
    name="process_rows",
    title="Which rows a process loads",
    params=("sharding", "global_shape", "process_devices"),
    practises="training/multi-host.md",
    solution="snippets/exercises/process_rows/solution.py:solution",
    cases=process_rows_cases,
)
