"""The grader of tp_specs: its hidden cases and what it checks.

The exercise practises Tensor parallelism (training/tensor-parallel.md);
its statement is docs/exercises/tp_specs.md.
"""

from __future__ import annotations

import jax
import numpy as np
from jax import P
from jax.sharding import Mesh, NamedSharding

from snippets.exercises.common import (
    build_model,
    make_mesh,
    place,
)
from snippets.exercises.grading import (
    Case,
    Exercise,
    Problems,
    array_problems,
    kind,
)

MLP_PARAMS = ("up.kernel", "up.bias", "down.kernel", "down.bias")


def tp_specs_cases() -> list[Case]:
    return [
        Case(
            about="axis='model', on an Auto mesh {'model': 8}",
            args=lambda: ("model",),
            check=lambda got, a: tp_problems(
                got, make_mesh((8,), ("model",), True), "model"
            ),
        ),
        Case(
            about="axis='tp', on an Auto mesh {'data': 2, 'tp': 4}",
            args=lambda: ("tp",),
            check=lambda got, a: tp_problems(
                got, make_mesh((2, 4), ("data", "tp"), True), "tp"
            ),
        ),
    ]


def tp_problems(got, mesh: Mesh, axis: str) -> Problems:
    from flax import nnx

    from snippets.hlo import count_collectives
    from snippets.models import D_HIDDEN, D_IN, D_OUT

    if not isinstance(got, dict):
        return [
            f"it returned {kind(got)}; return a dict from parameter name to P(...)."
        ]
    if missing := [n for n in MLP_PARAMS if n not in got]:
        return [
            f"the dict has no spec for {missing}; it needs keys {list(MLP_PARAMS)}."
        ]
    if extra := sorted(set(map(str, got)) - set(MLP_PARAMS)):
        return [f"the MLP has no parameters {extra}; the keys are {list(MLP_PARAMS)}."]
    if wrong := [n for n in MLP_PARAMS if not isinstance(got[n], P)]:
        return [f"the values must be PartitionSpecs, P(...); {wrong} are not."]
    if problems := other_axes_problems(got, axis):
        return problems

    model = build_model("MLP", (D_IN, D_HIDDEN, D_OUT), 0)
    x = np.random.default_rng(0).standard_normal((16, D_IN), dtype=np.float32)
    expected = np.asarray(model(x))
    params = {
        ".".join(map(str, path)): node
        for path, node in nnx.iter_graph(model)
        if isinstance(node, nnx.Param)
    }
    for name in MLP_PARAMS:
        try:
            placed = place(params[name][...], mesh, got[name])
        except Exception as err:
            return [
                f"{name} (shape {params[name][...].shape}) cannot be laid out as "
                f"{got[name]} on this mesh: {err}"
            ]
        params[name].set_value(placed)
    whole = [n for n in ("up.kernel", "down.kernel") if axis not in str(got[n])]
    if whole:
        return [
            f"{' and '.join(whole)} {'is' if len(whole) == 1 else 'are'} not split over "
            f"'{axis}': tensor parallelism splits both kernels, so that each device "
            f"holds 1/{mesh.shape[axis]} of them."
        ]
    graphdef, state = nnx.split(model)
    forward = jax.jit(
        lambda state, x: nnx.merge(graphdef, state)(x),
        out_shardings=NamedSharding(mesh, P()),
    )
    x_placed = place(x, mesh, P())
    counts = count_collectives(forward.lower(state, x_placed).compile())
    problems = array_problems(forward(state, x_placed), expected, rtol=1e-4, atol=1e-5)
    if counts != {"all-reduce": 1}:
        problems.append(
            f"the forward pass, with its output whole on every device, compiles to "
            f"{counts or 'no collectives'} on CPU; the column-then-row layout needs "
            f"exactly one all-reduce ({{'all-reduce': 1}}). Which kernel is split along "
            f"its columns, and which along its rows?"
        )
    return problems


def axes_of(spec: P) -> list[str]:
    """The mesh axes a spec names, in order."""
    names = []
    for entry in spec:
        for name in (entry,) if isinstance(entry, str) else entry or ():
            names.append(name)
    return names


def other_axes_problems(got: dict, axis: str) -> Problems:
    """A spec that splits over `axis` and over other mesh axes as well."""
    for name in MLP_PARAMS:
        names = axes_of(got[name])
        if axis in names and (others := [n for n in names if n != axis]):
            return [
                f"{name} is laid out as {got[name]}: split over "
                f"{', '.join(map(repr, others))} as well as '{axis}'. Tensor "
                f"parallelism splits the weights over the axis it is given, '{axis}', "
                "alone: the other axes of the mesh (such as 'data', for data "
                "parallelism) each hold a copy. Name only that axis in every spec."
            ]
    return []


EXERCISE = Exercise(
    name="tp_specs",
    title="Column and row specs: a tensor-parallel MLP with one all-reduce",
    params=("axis",),
    practises="training/tensor-parallel.md",
    solution="snippets/exercises/tp_specs/solution.py:solution",
    cases=tp_specs_cases,
)
