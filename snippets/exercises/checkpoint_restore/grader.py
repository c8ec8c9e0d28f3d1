"""The grader of checkpoint_restore: its hidden cases and what it checks.

The exercise practises Checkpoints across meshes (advanced/checkpoints.md);
its statement is docs/exercises/checkpoint_restore.md.

Each case saves a train state (an MLP of its own size, with random parameters, random Adam
moments and step count 7) from one mesh into a temporary directory, and asks for it on another
mesh with other specs. The directories are removed when the grader's Python exits.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import jax
import numpy as np
from jax import P
from jax.sharding import NamedSharding

from snippets.exercises.common import build_model, make_mesh, mesh_words
from snippets.exercises.grading import (
    Case,
    Exercise,
    Problems,
    array_problems,
    kind,
    mesh_text,
    sharding_problems,
    spec_text,
)

STEP = 7  # the step count of every saved state: not 0, so a fresh optimizer shows


def tensor_parallel(axis: str) -> dict[str, P]:
    return {
        "up.kernel": P(None, axis),
        "up.bias": P(axis),
        "down.kernel": P(axis, None),
        "down.bias": P(),
    }


FSDP = {  # the page's: every parameter split over "data"
    "up.kernel": P(None, "data"),
    "up.bias": P("data"),
    "down.kernel": P("data", None),
    "down.bias": P("data"),
}
TWO_D = {
    "up.kernel": P("data", "model"),
    "up.bias": P("model"),
    "down.kernel": P("model", "data"),
    "down.bias": P(),
}

# (MLP sizes, seed, saved on (shape, names, device ids, specs), restored onto the same)
SETUPS = [
    (
        (32, 128, 8),
        0,
        ((8,), ("data",), range(8), FSDP),
        ((4,), ("model",), range(4), tensor_parallel("model")),
    ),
    (
        (16, 64, 8),
        1,
        ((4,), ("model",), range(4), tensor_parallel("model")),
        ((2, 4), ("data", "model"), range(8), TWO_D),
    ),
    (
        (8, 24, 4),
        2,
        ((8,), ("data",), range(8), {**FSDP, "down.bias": P()}),  # 4 does not split
        ((2,), ("model",), (6, 7), tensor_parallel("model")),
    ),
]


def saved_state(sizes: tuple[int, int, int], seed: int) -> dict:
    """{"model": ..., "optimizer": ...} of an MLP and its Adam, every value random."""
    import optax
    from flax import nnx

    model = build_model("MLP", sizes, seed)
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    rng = np.random.default_rng(seed + 100)

    def fill(leaf):
        if leaf.ndim == 0:  # the step counts
            return np.asarray(STEP, leaf.dtype)
        return rng.standard_normal(leaf.shape).astype(leaf.dtype)

    nnx.update(optimizer, jax.tree.map(fill, nnx.state(optimizer)))
    return {"model": nnx.state(model), "optimizer": nnx.state(optimizer)}


def array_name(path) -> str:
    return jax.tree_util.keystr(path, simple=True, separator=".").removesuffix(".value")


def by_name(tree) -> dict:
    return {array_name(path): leaf for path, leaf in jax.tree.leaves_with_path(tree)}


def spec_for(name: str, specs: dict[str, P]) -> P:
    found = [param for param in specs if name.endswith("." + param)]
    return specs[found[0]] if found else P()


def mesh_of(shape, names, ids):
    return make_mesh(shape, names, devices=[jax.devices()[i] for i in ids])


def checkpoint_restore_cases() -> list[Case]:
    # Each case's args() saves into it; the closures keep it until the grader is done.
    folder = tempfile.TemporaryDirectory(prefix="checkpoint_restore-")
    cases = []
    for number, (sizes, seed, saved_on, restored_on) in enumerate(SETUPS, 1):
        state = saved_state(sizes, seed)
        values = {name: np.asarray(v) for name, v in by_name(state).items()}
        old_mesh = mesh_of(*saved_on[:3])
        old = {
            name: NamedSharding(old_mesh, spec_for(name, saved_on[3]))
            for name in values
        }

        def args(state=state, old=old, restored_on=restored_on, number=number):
            from orbax.checkpoint import v1 as ocp  # here: every check loads graders

            path = Path(tempfile.mkdtemp(prefix=f"case-{number}-", dir=folder.name))

            placed = jax.tree.map_with_path(
                lambda p, leaf: jax.device_put(leaf, old[array_name(p)]), state
            )
            ocp.save(path / "checkpoint", placed)
            specs = dict(restored_on[3])
            return path / "checkpoint", mesh_of(*restored_on[:3]), specs

        new_mesh = mesh_of(*restored_on[:3])
        ids = ", ".join(map(str, restored_on[2]))
        seen = Reads()
        cases.append(
            Case(
                about=(
                    f"MLP{sizes} with Adam, saved from a mesh "
                    f"{dict(zip(saved_on[1], saved_on[0], strict=True))}; restored "
                    f"onto {mesh_words(new_mesh)} of devices {ids}"
                ),
                args=args,
                check=lambda got, a, values=values, old=old, seen=seen: (
                    restore_problems(got, a, values, old)
                    or read_problems(seen.arrays, a, values)
                ),
                watch=seen.watching,
            )
        )
    return cases


class Reads:
    """The arrays Orbax builds while the learner's function runs: (shape, sharding).

    Orbax makes every jax.Array it reads from the shards it read, with
    jax.make_array_from_single_device_arrays, on the sharding it was asked for (its
    target's, or, without one, the saved one). Arrays read as saved and moved afterwards
    end up where they should, so only this tells them apart. This patches that JAX
    function, only during the call.
    """

    def __init__(self) -> None:
        self.arrays: list[tuple[tuple[int, ...], jax.sharding.Sharding]] = []

    @contextmanager
    def watching(self) -> Iterator[Reads]:
        self.arrays = []
        make = jax.make_array_from_single_device_arrays

        def recording(shape, sharding, arrays, *args, **kwargs):
            self.arrays.append((tuple(shape), sharding))
            return make(shape, sharding, arrays, *args, **kwargs)

        jax.make_array_from_single_device_arrays = recording
        try:
            yield self
        finally:
            jax.make_array_from_single_device_arrays = make


def read_problems(arrays: list, args, values: dict) -> Problems:
    """Was every array read straight onto a layout the result asks for?"""
    _, mesh, specs = args
    wanted: dict[tuple[int, ...], list[NamedSharding]] = {}
    for name, value in values.items():
        wanted.setdefault(value.shape, []).append(
            NamedSharding(mesh, spec_for(name, specs))
        )
    elsewhere = [
        sharding
        for shape, sharding in arrays
        if not any(
            sharding.is_equivalent_to(w, len(shape)) for w in wanted.get(shape, [])
        )
    ]
    if not elsewhere:
        return []
    where = sorted(
        {
            mesh_text(s.mesh)
            if isinstance(s, NamedSharding)
            else f"devices {sorted(d.id for d in s.device_set)}"
            for s in elsewhere
        }
    )
    return [
        f"it reads the checkpoint onto another layout and moves the arrays "
        f"afterwards: {len(elsewhere)} of the {len(arrays)} arrays Orbax read came "
        f"onto {' and '.join(where)}, not as specs says on the mesh it was given, "
        f"{mesh_text(mesh)}. Each such array is then held twice, and one saved whole "
        "is read whole. Pass ocp.load a target instead: the checkpoint's tree, "
        "ocp.metadata(path).metadata, as jax.ShapeDtypeStruct(shape, dtype, "
        "sharding=NamedSharding(mesh, spec)), so that every array is read straight "
        "onto its layout."
    ]


def restore_problems(got, args, values: dict, old: dict) -> Problems:
    """The first array that is missing, on the wrong layout, or with other values."""
    _, mesh, specs = args
    if got is None:
        return ["it returned None: return the tree that ocp.load returns."]
    found = by_name(got)
    for name, expected in values.items():
        if name not in found:
            return [
                f"the result has no array {name}: return the whole tree that "
                "ocp.load returns, the model's arrays and the optimizer's."
            ]
        array, spec = found[name], spec_for(name, specs)
        if not isinstance(array, jax.Array):
            return [f"{name} is {kind(array)}, not a jax.Array on the mesh."]
        if problems := layout_problems(name, array, mesh, spec, old[name]):
            return problems
        if problems := array_problems(array, expected, exact=True):
            return [f"{name}: {problems[0]} Restore the saved values unchanged."]
    return []


def layout_problems(name, array, mesh, spec, saved: NamedSharding) -> Problems:
    wanted = NamedSharding(mesh, spec)
    if array.sharding.is_equivalent_to(wanted, array.ndim):
        return []
    if array.sharding.is_equivalent_to(saved, array.ndim):
        return [
            f"{name} came back on the layout it was saved with, "
            f"{spec_text(saved, array.ndim)} on {mesh_text(saved.mesh)}, not as "
            f"{spec_text(wanted, array.ndim)} on the mesh it was given, "
            f"{mesh_text(mesh)}. Without a target (or with jax.ShapeDtypeStructs "
            "that carry no sharding) ocp.load restores every array as it was "
            "saved: give each ShapeDtypeStruct sharding=NamedSharding(mesh, spec)."
        ]
    if array.sharding.device_set != set(mesh.devices.flat):
        where = (
            mesh_text(array.sharding.mesh)
            if isinstance(array.sharding, NamedSharding)
            else f"devices {sorted(d.id for d in array.sharding.device_set)}"
        )
        return [
            f"{name} is on {where}, not on the mesh it was given, "
            f"{mesh_text(mesh)}. Lay every array out on that mesh; do not build "
            "one of your own."
        ]
    problems = sharding_problems(array, mesh, spec)
    moment = ".mu." in name or ".nu." in name
    return [
        f"{name}: {problems[0]}"
        + (
            " Adam's moments have their parameter's shape: give them its spec."
            if moment
            else ""
        )
    ]


EXERCISE = Exercise(
    name="checkpoint_restore",
    title="Restore a checkpoint onto another mesh",
    params=("path", "mesh", "specs"),
    practises="advanced/checkpoints.md",
    solution="snippets/exercises/checkpoint_restore/solution.py:solution",
    cases=checkpoint_restore_cases,
    on_error={
        "is not compatible with the stored shape": (
            "the hidden cases save MLPs of several sizes: take each array's shape "
            "and dtype from the checkpoint, ocp.metadata(path).metadata, not from a "
            "model you build."
        ),
    },
)
