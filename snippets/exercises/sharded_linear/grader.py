"""The grader of sharded_linear: its hidden cases and what it checks.

The exercise practises Sharding parameters (training/sharding-parameters.md);
its statement is docs/exercises/sharded_linear.md.
"""

from __future__ import annotations

from jax import P

from snippets.exercises.common import (
    make_mesh,
    mesh_words,
)
from snippets.exercises.grading import (
    Case,
    Exercise,
    Problems,
    array_problems,
    kind,
    sharding_problems,
)


def sharded_linear_cases() -> list[Case]:
    cases = []
    for d_in, d_out, shape, names, seed in [
        (32, 128, (8,), ("model",), 0),
        (32, 128, (2, 4), ("data", "model"), 7),
    ]:
        cases.append(
            Case(
                about=(
                    f"d_in={d_in}, d_out={d_out}, seed={seed}, on "
                    f"{mesh_words(make_mesh(shape, names))}"
                ),
                args=lambda d_in=d_in, d_out=d_out, shape=shape, names=names, seed=seed: (
                    d_in,
                    d_out,
                    make_mesh(shape, names),
                    seed,
                ),
                check=linear_problems,
            )
        )
    return cases


def linear_problems(got, args) -> Problems:
    from flax import nnx

    d_in, d_out, mesh, seed = args
    reference = nnx.Linear(d_in, d_out, rngs=nnx.Rngs(seed))
    problems: Problems = []
    wanted = {"kernel": P(None, "model"), "bias": P("model")}
    for name, spec in wanted.items():
        param = getattr(got, name, None)
        if not isinstance(param, nnx.Param):
            return [
                f"it returned {kind(got)} without an nnx.Param named {name}: return the "
                f"nnx.Linear itself."
            ]
        value = param[...]
        if found := array_problems(value, getattr(reference, name)[...]):
            problems.append(
                f"{name}: {found[0]} Build it with rngs=nnx.Rngs(seed) and the default "
                f"initializers, so that it matches nnx.Linear({d_in}, {d_out}, "
                f"rngs=nnx.Rngs({seed}))."
            )
            continue
        problems += [f"{name}: {p}" for p in sharding_problems(value, mesh, spec)]
        annotation = param.get_metadata().get("out_sharding")
        if annotation is None or tuple(annotation) != tuple(spec):
            problems.append(
                f"{name} carries no sharding annotation {tuple(spec)} (it has "
                f"{annotation}): create it with nnx.with_partitioning(init, "
                f"{tuple(spec)}), so that Flax knows its layout."
            )
    return problems


EXERCISE = Exercise(
    name="sharded_linear",
    title="An nnx.Linear born sharded (with_partitioning)",
    params=("d_in", "d_out", "mesh", "seed"),
    practises="training/sharding-parameters.md",
    solution="snippets/exercises/sharded_linear/solution.py:solution",
    cases=sharded_linear_cases,
    on_error={
        "An auto mesh context or metadata is required": (
            "create the layer inside `with jax.set_mesh(mesh):`."
        ),
    },
)
