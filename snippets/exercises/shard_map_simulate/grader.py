"""The grader of shard_map_simulate: its hidden cases and what it checks.

The exercise practises The data-parallel loop, simulated (training/simulated-data-parallel.md);
its statement is docs/exercises/shard_map_simulate.md.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from snippets.exercises.grading import (
    Case,
    Exercise,
    Problems,
    Program,
    array_problems,
    traced_program,
)


def shard_map_simulate_cases() -> list[Case]:
    cases = []
    # Few distinct shapes: each new one costs the learner's eager code a compile. The last
    # has another in_dim and number of features: neither may be written into the code.
    for seed, (rows, d_in), shards, features in [
        (0, (8, 4), 2, 3),
        (1, (8, 4), 4, 3),
        (42, (6, 5), 3, 6),
    ]:
        x = (
            np.random.default_rng(seed + 10)
            .standard_normal((rows, d_in))
            .astype(np.float32)
        )
        cases.append(
            Case(
                about=(
                    f"seed={float(seed)}, x = float32[{rows},{d_in}], "
                    f"num_shards={float(shards)}, features={float(features)}"
                ),
                args=lambda s=seed, x=x, n=shards, f=features: (
                    float(s),
                    jnp.asarray(x),
                    float(n),
                    float(f),
                ),
                check=lambda got, args, s=seed, n=shards, f=features: simulate_problems(
                    got, args[1], s, n, f
                ),
            )
        )
    return cases


def simulate_problems(got, x, seed: int, shards: int, features: int) -> Problems:
    from flax import nnx

    model = nnx.Linear(x.shape[-1], features, rngs=nnx.Rngs(seed))
    expected = np.asarray(model(x)).reshape(-1)
    problems = array_problems(got, expected, dtype=np.float32)
    if not problems or np.shape(got) != expected.shape:
        if np.shape(got) == (x.shape[0], features):
            problems.append("return the output flattened: out.reshape(-1).")
        return problems
    per_shard = expected.size // shards
    got = np.asarray(got)
    first_ok = np.allclose(got[:per_shard], expected[:per_shard], rtol=1e-5, atol=1e-6)
    if first_ok:
        problems.append(
            "The first shard's outputs are right and a later shard's are not. Do all "
            "shards use the same model, built once before the loop?"
        )
    elif np.allclose(np.sort(got), np.sort(expected), rtol=1e-5, atol=1e-6):
        problems.append(
            "The right numbers in the wrong order: join the shards' outputs along the "
            "batch axis (axis=0), then flatten."
        )
    return problems


def shard_problems(fn, args, program: Program) -> Problems:
    """The statement's loop: one layer, built once, applied to x shard by shard."""
    from flax import nnx

    x, shards = args[1], int(args[2])
    rows = x.shape[0] // shards
    block = (rows, *x.shape[1:])
    cut = 0
    for step in program.named("dynamic_slice", "slice", "split"):
        if step.reaches and 1 in step.operands[0]:
            cut += sum(shape == block for shape in step.out_shapes)
    problems = []
    if cut < shards:
        problems.append(
            f"it does not cut x into {shards} shards of {rows} rows: take each shard "
            f"with jax.lax.dynamic_slice_in_dim(x, i * {rows}, {rows}, axis=0) and "
            "apply the layer to it, as one device of a data-parallel mesh would, not "
            "to all of x at once."
        )
    built = []
    start = nnx.Linear.__init__

    def counting_start(self, *a, **k):
        built.append(self)
        start(self, *a, **k)

    nnx.Linear.__init__ = counting_start
    try:
        traced_program(fn, args, (1,))
    finally:
        nnx.Linear.__init__ = start
    if len(built) > 1:
        problems.append(
            f"it builds nnx.Linear {len(built)} times in one call: build it once, "
            "before the loop, and apply that one layer to every shard, as every device "
            "of a data-parallel mesh holds the same parameters."
        )
    return problems


EXERCISE = Exercise(
    name="shard_map_simulate",
    title="NNX shard_map simulation: the data-parallel loop by hand",
    params=("seed", "x", "num_shards", "features"),
    practises="training/simulated-data-parallel.md",
    solution="snippets/training/simulated_data_parallel/simulate.py:simulate",
    cases=shard_map_simulate_cases,
    traced=(1,),
    rules=shard_problems,
    rules_words=("x cut into shards", "one layer"),
    on_error={
        "Invalid rng value": "seed arrives as a float: nnx.Rngs(int(seed)).",
        "cannot be interpreted as an integer": (
            "num_shards and features arrive as floats: convert them with int()."
        ),
    },
)
