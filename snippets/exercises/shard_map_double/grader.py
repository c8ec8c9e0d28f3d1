"""The grader of shard_map_double: its hidden cases and what it checks.

The exercise practises shard_map basics (concepts/shard-map.md);
its statement is docs/exercises/shard_map_double.md.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax import P

from snippets.exercises.common import (
    SHARD_MAP_HINT,
)
from snippets.exercises.grading import (
    Case,
    Exercise,
    ShardedWork,
    Split,
    array_problems,
)


def shard_map_double_cases() -> list[Case]:
    cases = []
    for n, start in [(8, -2.0), (64, -16.0)]:
        x = start + 0.5 * np.arange(n, dtype=np.float32)
        cases.append(
            Case(
                about=f"x = float32[{n}], from {x[0]:g} to {x[-1]:g}",
                args=lambda x=x: (jnp.asarray(x),),
                check=lambda got, args, x=x: array_problems(
                    got, 2 * x, dtype=np.float32
                ),
            )
        )
    return cases


EXERCISE = Exercise(
    name="shard_map_double",
    title="shard_map basics: double a vector",
    params=("x",),
    practises="concepts/shard-map.md",
    solution="snippets/concepts/shard_map/basics.py:shard-map-double",
    cases=shard_map_double_cases,
    requires=("shard_map",),
    traced=(0,),
    on_device=True,
    hints={"shard_map": SHARD_MAP_HINT},
    # The statement fixes the specs and the body; the mesh may have one device or eight.
    sharded=ShardedWork(
        splits=(Split(argument=0, what="the elements of x", axis="data"),),
        out_specs=P("data"),
    ),
)
