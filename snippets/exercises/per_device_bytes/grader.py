"""The grader of per_device_bytes: its hidden cases and what it checks.

The exercise practises 2-D parallelism (training/two-d.md);
its statement is docs/exercises/per_device_bytes.md.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
from jax import P
from jax.sharding import NamedSharding

from snippets.exercises.common import (
    make_mesh,
)
from snippets.exercises.grading import (
    Case,
    Exercise,
    Problems,
    kind,
)


def per_device_bytes_cases() -> list[Case]:
    two_by_four = ((2, 4), ("data", "model"))
    # Other meshes too: the sizes of the axes must be read from the mesh, not assumed.
    four_by_two = ((4, 2), ("data", "model"))
    line = ((8,), ("data",))
    cases = []
    for shape, dtype, spec, mesh_args in [
        ((64, 32), jnp.float32, P("data", None), two_by_four),
        ((32, 128), jnp.bfloat16, P(None, "model"), two_by_four),
        ((16, 8, 4), jnp.float32, P(None, "model"), four_by_two),
        ((8, 16), jnp.int8, P(("data", "model")), two_by_four),
        ((10, 6), jnp.float32, P(), line),
    ]:
        block = NamedSharding(make_mesh(*mesh_args), spec).shard_shape(shape)
        expected = math.prod(block) * np.dtype(dtype).itemsize
        cases.append(
            Case(
                about=f"{np.dtype(dtype).name}{list(shape)} as {spec} on a mesh "
                f"{axes(mesh_args)}",
                args=lambda shape=shape, dtype=dtype, spec=spec, mesh_args=mesh_args: (
                    shape,
                    dtype,
                    spec,
                    make_mesh(*mesh_args),
                ),
                check=lambda got, a, e=expected, b=block: bytes_problems(got, e, b),
            )
        )
    cases.append(
        Case(
            about=f"float32[6, 4] as P('model') on a mesh {axes(two_by_four)}: should "
            "raise",
            args=lambda: ((6, 4), jnp.float32, P("model"), make_mesh(*two_by_four)),
            raises=ValueError,
        )
    )
    return cases


def axes(mesh_args) -> str:
    shape, names = mesh_args
    return (
        "{" + ", ".join(f"'{n}': {s}" for n, s in zip(names, shape, strict=True)) + "}"
    )


def bytes_problems(got, expected: int, block: tuple[int, ...]) -> Problems:
    if isinstance(got, bool) or not isinstance(got, int | np.integer):
        return [f"it returned {kind(got)}; return a whole number of bytes (an int)."]
    if got != expected:
        return [
            f"wrong number of bytes: expected {expected:,} (a block of shape {block} on "
            f"each device), got {int(got):,}."
        ]
    if not isinstance(got, int):
        return [
            f"it returned a NumPy {type(got).__name__}; return a Python int, as the "
            "statement asks: int(...) of it."
        ]
    return []


EXERCISE = Exercise(
    name="per_device_bytes",
    title="Bytes per device on a (data, model) mesh",
    params=("shape", "dtype", "spec", "mesh"),
    practises="training/two-d.md",
    solution="snippets/exercises/per_device_bytes/solution.py:solution",
    cases=per_device_bytes_cases,
)
