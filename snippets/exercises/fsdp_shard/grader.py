"""The grader of fsdp_shard: its hidden cases and what it checks.

The exercise practises FSDP (training/fsdp.md);
its statement is docs/exercises/fsdp_shard.md.
"""

from __future__ import annotations

import jax
from jax.sharding import NamedSharding

from snippets.exercises.common import (
    build_model,
    make_mesh,
    mesh_words,
)
from snippets.exercises.grading import (
    Case,
    Exercise,
    Problems,
    array_problems,
    byte_count,
    kind,
    per_device_param_bytes,
    spec_text,
    total_bytes,
)


def fsdp_shard_cases() -> list[Case]:
    from snippets.models import D_HIDDEN, D_IN, D_OUT

    specs = [
        ("MLP", (D_IN, D_HIDDEN, D_OUT), 0, (8,), ("data",)),
        ("Block", (32, 4, 64), 1, (8,), ("data",)),
        # 'data' of 4: up.kernel (30, 20) is split along 20, a multiple of 4 but not of 8,
        # although 30 is larger; down.kernel (20, 8) along 20, not 8.
        ("MLP", (30, 20, 8), 2, (4, 2), ("data", "model")),
    ]
    cases = []
    for model_name, sizes, seed, shape, names in specs:

        def args(
            model_name=model_name, sizes=sizes, seed=seed, shape=shape, names=names
        ):
            return build_model(model_name, sizes, seed), make_mesh(shape, names)

        cases.append(
            Case(
                about=(
                    f"{model_name}{sizes}, random parameters (seed {seed}), on "
                    f"{mesh_words(make_mesh(shape, names))}"
                ),
                args=args,
                check=lambda got, a, m=model_name, s=sizes, seed=seed: fsdp_problems(
                    got, a, build_model(m, s, seed)
                ),
            )
        )
    return cases


def param_arrays(model) -> dict[str, jax.Array]:
    from flax import nnx

    return {
        ".".join(map(str, path)): node[...]
        for path, node in nnx.iter_graph(model)
        if isinstance(node, nnx.Param)
    }


def fsdp_problems(got, args, reference) -> Problems:
    from flax import nnx

    model, mesh = args
    if got is None:
        return ["it returned None: change the model in place, then return it."]
    if not isinstance(got, nnx.Module):
        return [f"it returned {kind(got)}; change the model in place and return it."]
    if got is not model:
        return [
            "it returned a new model: change the one it was given in place (set each "
            "parameter's value), then return that one."
        ]
    arrays = param_arrays(model)
    for name, value in param_arrays(reference).items():
        if name not in arrays:
            return [f"the model has lost its parameter {name}."]
        if found := array_problems(arrays[name], value, exact=True):
            return [
                f"{name} changed: {found[0]} Move the parameters; do not change them."
            ]
    n = mesh.shape["data"]
    problems = []
    for name, array in arrays.items():
        axes = split_axes(array)
        if axes - {"data"}:
            problems.append(
                f"{name} is split over {sorted(axes - {'data'})} "
                f"({spec_text(array.sharding, array.ndim)}): FSDP splits parameters "
                f"over 'data' only."
            )
    if problems:
        return problems
    total = total_bytes(arrays)
    held = per_device_param_bytes(arrays)
    device, most = max(held.items(), key=lambda item: item[1])
    if most != total // n or len(held) != mesh.size:
        whole = [
            name for name, array in arrays.items() if "data" not in split_axes(array)
        ]
        problems.append(
            f"device {device} holds {byte_count(most)} of parameters; split {n} ways "
            f"over 'data', every device would hold {byte_count(total // n)} "
            f"(the total, {byte_count(total)}, divided by {n})."
            + (f" Not split over 'data': {', '.join(whole)}." if whole else "")
        )
        return problems
    for (
        name,
        array,
    ) in arrays.items():  # the page's rule: the largest dimension n divides
        fits = [size for size in array.shape if size % n == 0]
        spec = array.sharding.spec if isinstance(array.sharding, NamedSharding) else ()
        split = [d for d, entry in enumerate(spec) if entry is not None]
        if fits and split and array.shape[split[0]] != max(fits):
            largest = array.shape.index(max(fits))
            problems.append(
                f"{name} {tuple(array.shape)} is split along dimension {split[0]} (size "
                f"{array.shape[split[0]]}); its largest dimension that {n} divides is "
                f"dimension {largest} (size {max(fits)}): split that one."
            )
    return problems


def split_axes(array: jax.Array) -> set[str]:
    """The mesh axes an array is split over (none unless it has a NamedSharding)."""
    if not isinstance(array.sharding, NamedSharding):
        return set()
    entries = [e for e in array.sharding.spec if e is not None]
    return {a for e in entries for a in ((e,) if isinstance(e, str) else e)}


EXERCISE = Exercise(
    name="fsdp_shard",
    title="FSDP: every parameter split over 'data'",
    params=("model", "mesh"),
    practises="training/fsdp.md",
    solution="snippets/exercises/fsdp_shard/solution.py:solution",
    cases=fsdp_shard_cases,
)
