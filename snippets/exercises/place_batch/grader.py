"""The grader of place_batch: its hidden cases and what it checks.

The exercise practises Data parallelism (training/data-parallel.md);
its statement is docs/exercises/place_batch.md.
"""

from __future__ import annotations

import math

import jax
import numpy as np
from jax import P
from jax.sharding import Mesh, NamedSharding

from snippets.exercises.common import (
    checks,
    make_mesh,
    mesh_words,
)
from snippets.exercises.grading import (
    Case,
    Exercise,
    Problems,
    array_problems,
    shard_shape_problems,
    sharding_problems,
)


def place_batch_cases() -> list[Case]:
    def ok_case(shape, names, batch_shape, dtype=np.float32):
        x = np.arange(math.prod(batch_shape), dtype=dtype).reshape(batch_shape)
        mesh = make_mesh(shape, names)
        block = (batch_shape[0] // mesh.shape["data"], *batch_shape[1:])
        return Case(
            about=f"x = {x.dtype}{list(batch_shape)} on {mesh_words(mesh)}",
            args=lambda: (x.copy(), make_mesh(shape, names)),
            check=checks(
                lambda got, a: array_problems(got, x, dtype=x.dtype),
                lambda got, a: first_axis_problems(got, a[1]),
                lambda got, a: sharding_problems(got, a[1], P("data")),
                lambda got, a: shard_shape_problems(got, block),
            ),
        )

    def error_case(shape, names, batch_shape):
        mesh = make_mesh(shape, names)
        n = mesh.shape["data"]
        return Case(
            about=f"x = float32{list(batch_shape)} on {mesh_words(mesh)}: should raise",
            args=lambda: (np.zeros(batch_shape, np.float32), make_mesh(shape, names)),
            raises=ValueError,
            message_has=(f"multiple of {n}",),
        )

    return [
        ok_case((8,), ("data",), (16, 4)),
        ok_case((2, 4), ("data", "model"), (8, 3)),
        ok_case((4, 2), ("data", "model"), (4,), np.int32),  # labels: int32 stays
        # "data" second: its place in the mesh is not what names it
        ok_case((2, 4), ("model", "data"), (8, 3)),
        error_case((8,), ("data",), (12, 4)),
        error_case((2, 4), ("data", "model"), (5, 3)),
        # 6 examples split over 'model', not over 'data'
        error_case((2, 4), ("model", "data"), (6, 3)),
    ]


def first_axis_problems(got, mesh: Mesh) -> Problems:
    """The examples split over the mesh's first axis, on a mesh whose first axis is not
    "data"."""
    first = mesh.axis_names[0]
    if first == "data" or not isinstance(got, jax.Array):
        return []
    sharding = got.sharding
    if not isinstance(sharding, NamedSharding) or not sharding.spec:
        return []
    entry = sharding.spec[0]
    if entry != first and entry != (first,):
        return []
    return [
        f"it splits the examples over '{first}', the mesh's first axis, but this mesh "
        f"has its axes in the order {mesh.axis_names}: 'data' is not first. Name the "
        'axis rather than take the first one: P("data") and mesh.shape["data"], '
        "wherever 'data' is in the mesh."
    ]


EXERCISE = Exercise(
    name="place_batch",
    title="Place a batch over the data axis, checking it divides",
    params=("x", "mesh"),
    practises="training/data-parallel.md",
    solution="snippets/exercises/place_batch/solution.py:solution",
    cases=place_batch_cases,
)
