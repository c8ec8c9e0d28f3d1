"""The grader of manual_dense: its hidden cases and what it checks.

The exercise practises One dense layer, three ways (concepts/three-approaches.md);
its statement is docs/exercises/manual_dense.md.
"""

from __future__ import annotations

import numpy as np
from jax import P

from snippets.exercises.common import (
    SHARD_MAP_HINT,
    checks,
    make_mesh,
    place,
)
from snippets.exercises.grading import (
    Case,
    Exercise,
    ShardedWork,
    Split,
    array_problems,
    sharding_problems,
)


def manual_dense_cases() -> list[Case]:
    rng = np.random.default_rng(1701)
    cases = []
    for devices, d_in, d_out in [(8, 32, 4), (4, 16, 8)]:
        x = rng.standard_normal(d_in, dtype=np.float32)
        W = rng.standard_normal((d_in, d_out), dtype=np.float32)
        b = rng.standard_normal(d_out, dtype=np.float32)
        expected = 1 / (1 + np.exp(-(x @ W + b)))

        def args(x=x, W=W, b=b, devices=devices):
            mesh = make_mesh((devices,), ("x",))
            return (
                place(x, mesh, P("x")),
                place(W, mesh, P("x", None)),
                place(b, mesh, P()),
                mesh,
            )

        cases.append(
            Case(
                about=(
                    f"x = float32[{d_in}] as P('x'), W = float32[{d_in},{d_out}] as "
                    f"P('x', None), b = float32[{d_out}] as P(), on {devices} devices"
                ),
                args=args,
                check=checks(
                    lambda got, a, e=expected: array_problems(
                        got, e, rtol=1e-5, dtype=np.float32
                    ),
                    lambda got, a: sharding_problems(got, a[3], P()),
                ),
            )
        )
    return cases


def all_of_x(args) -> tuple[int, str]:
    n = args[3].shape["x"]
    return n, f"the contracting dimension is split over all {n} devices of 'x'."


EXERCISE = Exercise(
    name="manual_dense",
    title="A dense layer with shard_map and psum",
    params=("x", "W", "b", "mesh"),
    practises="concepts/three-approaches.md",
    solution="snippets/exercises/manual_dense/solution.py:solution",
    cases=manual_dense_cases,
    requires=("shard_map", "psum"),
    traced=(0, 1, 2),
    on_device=True,
    sharded=ShardedWork(
        splits=(
            Split(argument=0, what="x", axis="x", devices=all_of_x),
            Split(argument=1, what="the rows of W", axis="x", devices=all_of_x),
        ),
        out_specs=P(),
    ),
    hints={
        "shard_map": SHARD_MAP_HINT,
        "psum": "Add the devices' partial products with jax.lax.psum(..., 'x').",
    },
    on_error={
        "can't be statically inferred": (
            "each device's x @ W is only its part of the sum, different on every "
            "device; add the parts with jax.lax.psum before returning with "
            "out_specs=P()."
        ),
    },
)
