"""The grader of zero1_specs: its hidden cases and what it checks.

The exercise practises ZeRO-1 on the FSDP page (training/fsdp.md);
its statement is docs/exercises/zero1_specs.md.
"""

from __future__ import annotations

import math

import jax
import numpy as np
from jax import P
from jax.sharding import Mesh, NamedSharding

from snippets.exercises.common import build_model, make_mesh, mesh_words
from snippets.exercises.grading import (
    Case,
    Exercise,
    Problems,
    byte_count,
    kind,
    per_device_param_bytes,
)

PARTS = ("params", "grads", "moments")
NAMES = ("up.kernel", "up.bias", "down.kernel", "down.bias")
STEPS, BATCH = 2, 16
# Adam divides by the root of its second moment, so a gradient near zero, summed over the
# devices in another order, moves its parameter by more than rounding: 2 steps on the
# first case differed by 1.8e-05 on CPU. A wrong update is off by about the step, 1e-02.
TOLERANCE = 1e-4


def mlp_shapes(d_in: int, d_hidden: int, d_out: int) -> dict[str, tuple[int, ...]]:
    return {
        "up.kernel": (d_in, d_hidden),
        "up.bias": (d_hidden,),
        "down.kernel": (d_hidden, d_out),
        "down.bias": (d_out,),
    }


def zero1_specs_cases() -> list[Case]:
    from snippets.models import D_HIDDEN, D_IN, D_OUT

    cases = []
    # The FSDP page's MLP and mesh; then, on a mesh with a second axis, sizes where "data"
    # (4) divides 20 but not 30, and 8 divides neither; then three parameters that no
    # dimension of splits over 4.
    for sizes, shape, names, seed in [
        ((D_IN, D_HIDDEN, D_OUT), (8,), ("data",), 0),
        ((30, 20, 8), (4, 2), ("data", "model"), 1),
        ((12, 6, 3), (4,), ("data",), 2),
    ]:
        mesh = make_mesh(shape, names, auto=True)
        cases.append(
            Case(
                about=f"MLP{sizes} with Adam, on {mesh_words(mesh)}",
                args=lambda s=sizes, m=mesh: (mlp_shapes(*s), m),
                check=lambda got, a, s=sizes, seed=seed: zero1_problems(
                    got, a, s, seed
                ),
            )
        )
    cases.append(
        Case(
            about="a mesh {'model': 8} with no axis 'data': should raise",
            args=lambda: (
                mlp_shapes(D_IN, D_HIDDEN, D_OUT),
                make_mesh((8,), ("model",), auto=True),
            ),
            raises=ValueError,
            message_has=("data",),
        )
    )
    return cases


def axes_of(entry) -> tuple[str, ...]:
    """The mesh axes one entry of a spec names."""
    if entry is None:
        return ()
    return (entry,) if isinstance(entry, str) else tuple(entry)


def form_problems(got, shapes: dict) -> Problems:
    if not isinstance(got, dict):
        return [f"it returned {kind(got)}; return a dict with keys {list(PARTS)}."]
    if sorted(map(str, got)) != sorted(PARTS):
        return [f"the dict has keys {list(got)}; it needs exactly {list(PARTS)}."]
    for part in PARTS:
        specs = got[part]
        if not isinstance(specs, dict) or sorted(map(str, specs)) != sorted(shapes):
            return [
                f"got[{part!r}] should map every parameter's name {list(shapes)} to a "
                f"spec; it is {kind(specs)}"
                + (f" with keys {list(specs)}." if isinstance(specs, dict) else ".")
            ]
        if wrong := [n for n in shapes if not isinstance(specs[n], P)]:
            return [
                f"the values must be PartitionSpecs, P(...); {part} {wrong} are not."
            ]
    return []


def layout_problems(got, shapes: dict, mesh: Mesh) -> Problems:
    """Specs that name another axis than 'data', or split a dimension 'data' does not
    divide: what cannot be ZeRO-1 before anything is placed."""
    n = mesh.shape["data"]
    for part in PARTS:
        for name, shape in shapes.items():
            spec = got[part][name]
            what, are = {
                "params": (f"parameter {name}", "is"),
                "grads": (f"the gradient of {name}", "is"),
                "moments": (f"the moments of {name}", "are"),
            }[part]
            if len(spec) > len(shape):
                return [
                    f"{what} {are} laid out as {spec}, which has more entries than "
                    f"{name} {shape} has dimensions."
                ]
            others = sorted({a for e in spec for a in axes_of(e)} - {"data"})
            if others:
                return [
                    f"{what} {are} laid out as {spec}: split over "
                    f"{', '.join(map(repr, others))}. ZeRO-1 splits the optimizer state "
                    "over 'data', the axis that splits the batch, and nothing over any "
                    "other axis: the other axes of the mesh each hold a copy."
                ]
            for dim, entry in enumerate(spec):
                if "data" in axes_of(entry) and shape[dim] % n:
                    fits = [d for d, size in enumerate(shape) if size % n == 0]
                    advice = (
                        f"split dimension {fits[0]} (size {shape[fits[0]]}) instead"
                        if fits
                        else "no dimension of it does, so keep it whole with P()"
                    )
                    return [
                        f"{what} {shape} {are} laid out as {spec}: dimension {dim} has "
                        f"size {shape[dim]}, which the {n} devices of 'data' do not "
                        f"divide; {advice}."
                    ]
    return []


def nbytes(shape: tuple[int, ...]) -> int:
    return 4 * math.prod(shape)  # float32


def split_by(got, part: str) -> list[str]:
    return [n for n, spec in got[part].items() if any(e is not None for e in spec)]


def zero1_problems(got, args, sizes, seed) -> Problems:
    shapes, mesh = args
    if problems := form_problems(got, shapes) or layout_problems(got, shapes, mesh):
        return problems
    n = mesh.shape["data"]
    total = sum(nbytes(s) for s in shapes.values())
    state = build_state(got, shapes, mesh, sizes, seed)

    held = max(per_device_param_bytes(state["params"]).values())
    if held != total:
        return [
            f"each device holds {byte_count(held)} of the parameters, not all "
            f"{byte_count(total)}: {', '.join(split_by(got, 'params'))} "
            "split over 'data'. Splitting the parameters too is FSDP (ZeRO-3); ZeRO-1 "
            "keeps every parameter whole on every device, as data parallelism does."
        ]
    held = max(per_device_param_bytes(state["grads"]).values())
    if held != total:
        return [
            f"each device holds {byte_count(held)} of the gradients, not all "
            f"{byte_count(total)}: {', '.join(split_by(got, 'grads'))} split over "
            "'data'. Splitting the gradients is ZeRO-2; ZeRO-1 keeps the whole summed "
            "gradient on every device, as data parallelism does."
        ]
    least = {
        name: nbytes(s) // n if any(size % n == 0 for size in s) else nbytes(s)
        for name, s in shapes.items()
    }
    held = per_device_param_bytes(state["moments"])
    want = 2 * sum(least.values())  # mu and nu
    if max(held.values()) == 2 * total:
        return [
            f"each device holds all {byte_count(2 * total)} of Adam's mu and nu: "
            "that is plain data parallelism. ZeRO-1 splits each moment over 'data', "
            f"so that a device holds {byte_count(want)} of them here."
        ]
    if max(held.values()) != want:
        whole = [
            name
            for name in shapes
            if name not in split_by(got, "moments")
            and least[name] < nbytes(shapes[name])
        ]
        return [
            f"each device holds {byte_count(max(held.values()))} of Adam's mu and nu; "
            f"split over 'data' wherever {n} divides a dimension, it would hold "
            f"{byte_count(want)}. Kept whole although {n} divides a dimension: "
            f"{', '.join(whole)}."
        ]
    return step_problems(state, mesh, sizes, seed)


def build_state(got, shapes, mesh, sizes, seed) -> dict:
    """The MLP placed by the specs, Adam's moments by theirs, and one gradient."""
    import optax
    from flax import nnx

    from snippets.training.fsdp.zero import shard_moments

    model = build_model("MLP", sizes, seed)
    params = named_params(model)
    for name, param in params.items():
        placed = NamedSharding(mesh, got["params"][name])
        param.set_value(jax.device_put(param[...], placed))
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    shard_moments(optimizer, got["moments"], mesh)  # the FSDP page's function
    x, y = data(sizes, seed)[0]
    grads = jax.jit(
        lambda model, x, y: nnx.grad(loss_of)(model, x, y),
        out_shardings=grad_shardings(model, got["grads"], mesh),
    )(model, *place_batch(x, y, mesh))
    adam = optimizer.opt_state[0]
    return {
        "model": model,
        "optimizer": optimizer,
        "grad_shardings": grad_shardings(model, got["grads"], mesh),
        "params": {n: p[...] for n, p in params.items()},
        "grads": leaves_by_name(grads),
        "moments": {
            f"{m}.{n}": a
            for m in ("mu", "nu")
            for n, a in leaves_by_name(getattr(adam, m)).items()
        },
    }


def named_params(model) -> dict:
    from flax import nnx

    return {
        ".".join(map(str, path)): node
        for path, node in nnx.iter_graph(model)
        if isinstance(node, nnx.Param)
    }


def leaves_by_name(tree) -> dict[str, jax.Array]:
    found = {}
    for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
        keys = [getattr(k, "key", getattr(k, "name", None)) for k in path]
        found[".".join(str(k) for k in keys if k != "value")] = leaf
    return found


def grad_shardings(model, specs: dict, mesh: Mesh):
    from flax import nnx

    def sharding(path, _):
        keys = [getattr(k, "key", getattr(k, "name", None)) for k in path]
        name = ".".join(str(k) for k in keys if k != "value")
        return NamedSharding(mesh, specs[name])

    return jax.tree_util.tree_map_with_path(sharding, nnx.state(model, nnx.Param))


def loss_of(model, x, y):
    from snippets.models import loss_fn

    return loss_fn(model, x, y)


def data(sizes, seed) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(100 + seed)
    return [
        (
            rng.standard_normal((BATCH, sizes[0]), dtype=np.float32),
            rng.standard_normal((BATCH, sizes[2]), dtype=np.float32),
        )
        for _ in range(STEPS)
    ]


def place_batch(x, y, mesh: Mesh):
    rows = NamedSharding(mesh, P("data"))
    return jax.device_put(x, rows), jax.device_put(y, rows)


def step_problems(state: dict, mesh: Mesh, sizes, seed, lr: float = 1e-2) -> Problems:
    """Train STEPS steps in the layout built, and one device without any: the same
    parameters, and the layout kept."""
    from flax import nnx

    model, optimizer = state["model"], state["optimizer"]
    homes = state["grad_shardings"]

    def step(model, optimizer, x, y):
        loss, grads = nnx.value_and_grad(loss_of)(model, x, y)
        grads = jax.lax.with_sharding_constraint(grads, homes)
        optimizer.update(model, grads)
        return loss, model, optimizer

    everywhere = NamedSharding(mesh, P())
    layouts = jax.tree.map(lambda a: a.sharding, (model, optimizer))
    program = jax.jit(step, out_shardings=(everywhere, *layouts))
    reference = reference_model(sizes, seed, lr)
    for x, y in data(sizes, seed):
        _, model, optimizer = program(model, optimizer, *place_batch(x, y, mesh))
    got = {n: np.asarray(p[...]) for n, p in named_params(model).items()}
    want = {n: np.asarray(p[...]) for n, p in named_params(reference).items()}
    worst = max(float(np.max(np.abs(got[n] - want[n]))) for n in want)
    if worst > TOLERANCE:
        return [
            f"after {STEPS} Adam steps in this layout the parameters differ from one "
            f"device's by up to {worst:.3g} (more than {TOLERANCE:g}): the layout "
            "changed what the step computes."
        ]
    return []


def reference_model(sizes, seed, lr: float):
    """The same MLP and Adam trained on one device, nothing placed."""
    import optax
    from flax import nnx

    from snippets.models import train_step

    model = build_model("MLP", sizes, seed)
    optimizer = nnx.Optimizer(model, optax.adam(lr), wrt=nnx.Param)
    step = nnx.jit(train_step)
    for x, y in data(sizes, seed):
        step(model, optimizer, x, y)
    return model


EXERCISE = Exercise(
    name="zero1_specs",
    title="ZeRO-1: the specs of a train state",
    params=("shapes", "mesh"),
    practises="training/fsdp.md",
    solution="snippets/exercises/zero1_specs/solution.py:solution",
    cases=zero1_specs_cases,
)
