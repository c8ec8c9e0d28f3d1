"""The grader of sharded_linear: its hidden cases and what it checks.

The exercise practises Sharding parameters (training/sharding-parameters.md);
its statement is docs/exercises/sharded_linear.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import jax
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
        seen = Creations()
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
                check=lambda got, a, seen=seen: linear_problems(got, a, seen),
                watch=seen.watching,
            )
        )
    return cases


@dataclass(frozen=True)
class Created:
    """An nnx.Param as Flax constructed it: its shape, the sharding annotation it carried,
    and the mesh axes its value was split over, one entry per dimension."""

    shape: tuple[int, ...]
    annotation: tuple | None
    layout: tuple


class Creations:
    """Every nnx.Param constructed while the learner's function runs.

    A layer moved with jax.device_put after it was made, and annotated by hand, ends up
    as one created annotated and laid out: only its creation tells them apart. Flax lays
    an annotated parameter out in Variable.__init__ (eagerly with a mesh in context, as a
    sharded value in the trace of an nnx.jit), so the grader records each Param as that
    constructor leaves it. This patches Flax's Variable.__init__, only during the call.
    """

    def __init__(self) -> None:
        self.params: list[Created] = []

    @contextmanager
    def watching(self) -> Iterator[Creations]:
        from flax import nnx
        from flax.nnx import variablelib

        self.params = []
        construct = variablelib.Variable.__init__

        def recording(variable, *args, **kwargs):
            construct(variable, *args, **kwargs)
            if isinstance(variable, nnx.Param):
                self.params.append(created(variable))

        variablelib.Variable.__init__ = recording
        try:
            yield self
        finally:
            variablelib.Variable.__init__ = construct


def created(param) -> Created:
    value = param.get_value()
    annotation = param.get_metadata().get("out_sharding")
    if isinstance(value, jax.ShapeDtypeStruct):
        spec = getattr(value.sharding, "spec", None) or ()
    else:
        spec = getattr(jax.typeof(value).sharding, "spec", None) or ()
    return Created(
        tuple(value.shape),
        None if annotation is None else tuple(annotation),
        entries(spec, len(value.shape)),
    )


def entries(spec, ndim: int) -> tuple:
    """A spec or an annotation as one entry per dimension: None, or an axis name."""
    padded = list(spec) + [None] * (ndim - len(spec))
    return tuple(e[0] if isinstance(e, tuple) and len(e) == 1 else e for e in padded)


def creation_problems(params: list[Created], d_in: int, d_out: int) -> Problems:
    """Was every parameter annotated, and laid out by Flax, as it was created?"""
    named = {(d_in, d_out): "kernel", (d_out,): "bias"}
    init = {"kernel": "lecun_normal()", "bias": "zeros_init()"}
    for param in params:
        name = named.get(param.shape, f"a parameter of shape {param.shape}")
        split = any(entry is not None for entry in param.layout)
        if param.annotation is None:
            how = (
                f"{name}_init=nnx.with_partitioning(nnx.initializers.{init[name]}, "
                f"{tuple(WANTED[name])})"
                if name in WANTED
                else "nnx.with_partitioning(init, names)"
            )
            return [
                f"{name} was created plain and annotated only afterwards: when Flax "
                f"created it (an nnx.Param of shape {param.shape}) it carried no "
                "sharding annotation"
                + ("" if split else " and was not split over the mesh")
                + ", so the annotation and the layout it has now were given to it "
                "later (by jax.device_put and metadata set by hand, say). Give the "
                f"annotation when it is created, {how}, and build the layer inside "
                "`with jax.set_mesh(mesh):` (directly, or by calling an nnx.jit "
                "function there), so that Flax lays each parameter out from its "
                "annotation as it creates it."
            ]
        if param.layout != entries(param.annotation, len(param.shape)):
            return [
                f"{name} was created with its annotation {param.annotation}, but Flax "
                f"did not lay it out by it: when created it was split as "
                f"{param.layout}, and it was moved afterwards. Flax lays an annotated "
                "parameter out as it creates it only with eager sharding on (the "
                "default; not under nnx.use_eager_sharding(False)) and the mesh in "
                "context: build the layer inside `with jax.set_mesh(mesh):`."
            ]
    return []


WANTED = {"kernel": P(None, "model"), "bias": P("model")}


def linear_problems(got, args, seen: Creations) -> Problems:
    from flax import nnx

    d_in, d_out, mesh, seed = args
    reference = nnx.Linear(d_in, d_out, rngs=nnx.Rngs(seed))
    problems: Problems = []
    for name, spec in WANTED.items():
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
    return problems or creation_problems(seen.params, d_in, d_out)


EXERCISE = Exercise(
    name="sharded_linear",
    title="An nnx.Linear laid out by its annotations (with_partitioning)",
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
