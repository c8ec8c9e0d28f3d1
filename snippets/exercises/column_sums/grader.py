"""The grader of column_sums: its hidden cases and what it checks.

The exercise practises Automatic sharding with jax.jit (concepts/automatic-sharding.md);
its statement is docs/exercises/column_sums.md.
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


def column_sums_cases() -> list[Case]:
    rng = np.random.default_rng(11)
    cases = []
    for shape, names, (rows, cols) in [
        ((2, 4), ("x", "y"), (8, 4)),
        ((4, 2), ("a", "b"), (8, 6)),
    ]:
        # Sixteenths, up to 62: float32 sums them exactly in any order, while bfloat16
        # (8 significant bits) rounds them and integers drop their fractions.
        x = (rng.integers(-999, 1000, (rows, cols)) / 16).astype(np.float32)
        spec = P(*names)

        def args(x=x, shape=shape, names=names, spec=spec):
            mesh = make_mesh(shape, names, auto=True)
            return place(x, mesh, spec), mesh

        cases.append(
            Case(
                about=f"x = float32[{rows},{cols}] laid out as {spec} on "
                + mesh_words(make_mesh(shape, names, auto=True)),
                args=args,
                check=checks(
                    lambda got, a, x=x: array_problems(
                        got, x.sum(axis=0), dtype=np.float32
                    ),
                    lambda got, a: sharding_problems(got, a[1], P()),
                ),
            )
        )
    return cases


EXERCISE = Exercise(
    name="column_sums",
    title="Column sums, whole on every device (out_shardings)",
    params=("x", "mesh"),
    practises="concepts/automatic-sharding.md",
    solution="snippets/exercises/column_sums/solution.py:solution",
    cases=column_sums_cases,
    requires=("jit",),
    traced=(0,),
    on_device=True,
    hints={
        "jit": (
            "The statement asks for the sums computed under jax.jit: "
            "jax.jit(f, out_shardings=NamedSharding(mesh, P()))(x)."
        ),
    },
)
