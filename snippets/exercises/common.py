"""What several graders share: meshes and placements built the same way, how a mesh is
described to the learner, checks run in order, and the models the FSDP and tensor-parallel
exercises grade."""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import P
from jax.sharding import AxisType, Mesh, NamedSharding

from snippets.exercises.grading import (
    Problems,
)


def make_mesh(shape, names, auto=False, devices=None) -> Mesh:
    kind_ = AxisType.Auto if auto else AxisType.Explicit
    devices = jax.devices()[: math.prod(shape)] if devices is None else devices
    return jax.make_mesh(
        shape, names, axis_types=(kind_,) * len(shape), devices=devices
    )


def place(values, mesh: Mesh, spec: P) -> jax.Array:
    return jax.device_put(values, NamedSharding(mesh, spec))


def mesh_words(mesh: Mesh) -> str:
    axes = ", ".join(f"'{n}': {s}" for n, s in mesh.shape.items())
    kind_ = "Auto" if mesh.axis_types[0] == AxisType.Auto else "Explicit"
    return f"an {kind_} mesh {{{axes}}}"


def checks(*parts: Callable[[object, tuple], Problems]) -> Callable:
    """Run checks in order, stopping at the first that finds something."""

    def run(got, args) -> Problems:
        for part in parts:
            if problems := part(got, args):
                return problems
        return []

    return run


def build_model(name: str, sizes: tuple[int, ...], seed: int):
    """A model of snippets/models.py with random parameters drawn by NumPy.

    Flax's initializers compile a small program for every parameter shape; the grader
    builds many models, so it takes the structure from nnx.eval_shape (nothing compiled)
    and fills in the numbers itself.
    """
    from flax import nnx

    from snippets.models import MLP, Block

    cls = {"MLP": MLP, "Block": Block}[name]
    model = nnx.eval_shape(lambda: cls(*sizes, rngs=nnx.Rngs(seed)))
    rng = np.random.default_rng(seed)
    for _, param in nnx.iter_graph(model):
        if isinstance(param, nnx.Param):
            shape, dtype = param.get_value().shape, param.get_value().dtype
            values = rng.standard_normal(shape).astype(dtype) / np.sqrt(shape[0])
            param.set_value(jnp.asarray(values))
    return model


SHARD_MAP_HINT = (
    "Compute the result inside jax.shard_map(f, mesh=..., in_specs=..., out_specs=...)."
)
