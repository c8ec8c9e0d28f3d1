"""The grader of shard_map_vs_vmap: its hidden cases and what it checks.

The exercise practises shard_map vs vmap (concepts/shard-map-vs-vmap.md);
its statement is docs/exercises/shard_map_vs_vmap.md.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from snippets.exercises.grading import (
    Case,
    Exercise,
    Problems,
    Program,
    ShardedWork,
    Split,
    array_problems,
)


def shard_map_vs_vmap_cases() -> list[Case]:
    rng = np.random.default_rng(3)
    cases = []
    # 2 rows is the seed exercise's own example; 17 rows divide over one device only; 6
    # and 12 rows split over 6 devices, more than the 2 and 4 that they share with 8.
    for rows, cols in [(8, 3), (24, 5), (2, 2), (17, 3), (6, 4), (12, 3)]:
        x = rng.integers(-4, 5, (rows, cols)).astype(np.float32)
        sums = (x**2).sum(axis=1)
        cases.append(
            Case(
                about=f"x = float32[{rows},{cols}]",
                args=lambda x=x: (jnp.asarray(x),),
                check=lambda got, args, s=sums: stacked_problems(got, s),
            )
        )
    return cases


def stacked_problems(got, sums: np.ndarray) -> Problems:
    expected = np.stack([sums, sums])
    if np.shape(got) != expected.shape and np.shape(got) == expected.shape[::-1]:
        return [
            f"wrong shape: expected {expected.shape}, got {np.shape(got)}: stack the two "
            f"results along a new first axis (axis=0), one row per method."
        ]
    return array_problems(got, expected, dtype=np.float32)


def devices_for(args) -> tuple[int, str]:
    """The statement's rule: as many devices as divide B, all 8 when they do."""
    rows, most = args[0].shape[0], jax.device_count()
    k = max(d for d in range(1, most + 1) if rows % d == 0)
    return k, (
        f"{k} is the most devices (of {most}) that divide B = {rows}. Build the mesh "
        f"from jax.devices()[:k], with k the largest divisor of B that is at most "
        f"{most}."
    )


def vmap_problems(fn, args, program: Program) -> Problems:
    """The statement's two uses of jax.vmap: once on x, once inside the shard_map body."""
    axes = {
        name
        for step in program.named("shard_map")
        if step.reaches
        for name in step.params["mesh"].axis_names
    }
    outside = any(not (bound & axes) for bound in program.vmaps)
    inside = any(bound & axes for bound in program.vmaps)
    problems = []
    if not outside:
        problems.append(
            "it does not compute the first result with jax.vmap: apply jax.vmap of the "
            "per-row function to x, outside the shard_map (a sum over axis=1 is not "
            "the exercise)."
        )
    if not inside:
        problems.append(
            "its shard_map body does not use jax.vmap: the body gets a block of rows, "
            "so vmap the same per-row function over it."
        )
    return problems


EXERCISE = Exercise(
    name="shard_map_vs_vmap",
    title="shard_map vs vmap: per-row sums of squares both ways",
    params=("x",),
    practises="concepts/shard-map-vs-vmap.md",
    solution="snippets/concepts/shard_map_vs_vmap/compare.py:shard-map-vs-vmap",
    cases=shard_map_vs_vmap_cases,
    requires=("shard_map",),
    traced=(0,),
    on_device=True,
    sharded=ShardedWork(
        splits=(Split(argument=0, what="the rows of x", devices=devices_for),),
    ),
    rules=vmap_problems,
    rules_words=("uses vmap",),
    hints={"shard_map": "Compute the second result with jax.shard_map."},
    on_error={
        "not evenly divisible": (
            "the rows of x must split evenly over the mesh: build it from as many "
            "devices as divide B, jax.devices()[:k] with k the largest divisor of B "
            "that is at most jax.device_count()."
        ),
    },
)
