"""The grader of matmul_rows: its hidden cases and what it checks.

The exercise practises Explicit sharding (concepts/explicit-sharding.md);
its statement is docs/exercises/matmul_rows.md.
"""

from __future__ import annotations

import numpy as np
from jax import P

from snippets.exercises.common import (
    checks,
    make_mesh,
    mesh_words,
    place,
)
from snippets.exercises.grading import (
    Case,
    Exercise,
    array_problems,
    sharding_problems,
)


def matmul_rows_cases() -> list[Case]:
    rng = np.random.default_rng(5)
    cases = []
    for rows, inner, cols in [(8, 16, 4), (4, 8, 8)]:
        # Thirty-seconds, up to 9.4: float32 sums their products exactly in any order,
        # while bfloat16 (8 significant bits) rounds them.
        x = (rng.integers(-300, 301, (rows, inner)) / 32).astype(np.float32)
        w = (rng.integers(-300, 301, (inner, cols)) / 32).astype(np.float32)

        def args(x=x, w=w):
            mesh = make_mesh((2, 4), ("x", "y"))
            return place(x, mesh, P("x", "y")), place(w, mesh, P("y", None)), mesh

        cases.append(
            Case(
                about=(
                    f"x = float32[{rows},{inner}] as P('x', 'y'), w = "
                    f"float32[{inner},{cols}] as P('y', None), on {mesh_words(make_mesh((2, 4), ('x', 'y')))}"
                ),
                args=args,
                check=checks(
                    lambda got, a, x=x, w=w: array_problems(
                        got, x @ w, dtype=np.float32
                    ),
                    lambda got, a: sharding_problems(got, a[2], P("x", None)),
                ),
            )
        )
    return cases


EXERCISE = Exercise(
    name="matmul_rows",
    title="An ambiguous contraction made explicit (out_sharding)",
    params=("x", "w", "mesh"),
    practises="concepts/explicit-sharding.md",
    solution="snippets/exercises/matmul_rows/solution.py:solution",
    cases=matmul_rows_cases,
    traced=(0, 1),
    on_device=True,
    on_error={
        "Contracting dimensions are sharded": (
            "say where the result goes: jnp.matmul(x, w, out_sharding=...)."
        ),
    },
)
