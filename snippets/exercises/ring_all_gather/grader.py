"""The grader of ring_all_gather: its hidden cases and what it checks.

The exercise practises Collectives (concepts/collectives.md);
its statement is docs/exercises/ring_all_gather.md.
"""

from __future__ import annotations

import numpy as np
from jax import P

from snippets.exercises.common import (
    SHARD_MAP_HINT,
    make_mesh,
    mesh_words,
    place,
)
from snippets.exercises.grading import (
    Case,
    Exercise,
    Problems,
    ShardedWork,
    Split,
    array_problems,
)


def ring_all_gather_cases() -> list[Case]:
    cases = []
    for devices, length, scale in [(8, 16, -1.0), (4, 12, 1.5)]:
        x = scale * np.arange(length, dtype=np.float32)

        def args(x=x, devices=devices):
            mesh = make_mesh((devices,), ("x",))
            return place(x, mesh, P("x")), mesh

        cases.append(
            Case(
                about=f"x = float32[{length}] split over {mesh_words(make_mesh((devices,), ('x',)))}",
                args=args,
                check=lambda got, a, x=x, n=devices: ring_problems(got, x, n),
            )
        )
    return cases


def ring_problems(got, x: np.ndarray, n: int) -> Problems:
    expected = np.tile(x, (n, 1))
    problems = array_problems(got, expected, dtype=np.float32)
    if problems and np.shape(got) == expected.shape:
        wrong = [d for d in range(n) if not np.allclose(np.asarray(got)[d], x)]
        problems.append(
            f"Row d is the copy device d built; the copies of devices {wrong} are wrong. "
            f"A ring of {n} devices needs {n - 1} hops for every block to reach everyone."
        )
    elif problems and np.shape(got) == (n * len(x),):
        problems.append(
            "Return each device's copy as one row: reshape it to (1, len(x)) inside the "
            "body, with out_specs=P('x')."
        )
    return problems


EXERCISE = Exercise(
    name="ring_all_gather",
    title="An all-gather from ppermute steps round a ring",
    params=("x", "mesh"),
    practises="concepts/collectives.md",
    solution="snippets/exercises/ring_all_gather/solution.py:solution",
    cases=ring_all_gather_cases,
    requires=("shard_map", "ppermute"),
    forbids=("all_gather", "psum", "all_to_all", "psum_scatter"),
    traced=(0,),
    on_device=True,
    sharded=ShardedWork(
        splits=(
            Split(
                argument=0,
                what="the blocks of x",
                axis="x",
                devices=lambda args: (
                    args[1].shape["x"],
                    "every device of the mesh's axis 'x' holds one block.",
                ),
            ),
        ),
        out_specs=P("x"),
    ),
    hints={
        "shard_map": SHARD_MAP_HINT,
        "ppermute": "Pass the blocks from device to device with jax.lax.ppermute.",
        "all_gather": "Build the gather from jax.lax.ppermute steps instead.",
        "psum": "Move blocks with jax.lax.ppermute; add nothing up.",
    },
)
