"""The exercises: each one's contract and hidden cases, in the reading order of the site.

The expected answers are computed here independently of the reference solutions (mostly with
NumPy), so that the tests, which run the grader on the reference solutions, check both.
Nothing here touches a device until a case is built: `snippets.exercises.check` gives JAX its
8 CPU devices first.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import P
from jax.sharding import AxisType, Mesh, NamedSharding

from snippets.exercises.grading import (
    Case,
    Exercise,
    Problems,
    array_problems,
    byte_count,
    kind,
    per_device_param_bytes,
    shard_shape_problems,
    sharding_problems,
    spec_text,
    total_bytes,
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


# ----------------------------------------------------------------------------------------
# shard_map basics (concepts/shard-map.md)


def shard_map_double_cases() -> list[Case]:
    cases = []
    for n, start in [(8, -2.0), (64, -16.0)]:
        x = start + 0.5 * np.arange(n, dtype=np.float32)
        cases.append(
            Case(
                about=f"x = float32[{n}], from {x[0]:g} to {x[-1]:g}",
                args=lambda x=x: (jnp.asarray(x),),
                check=lambda got, args, x=x: array_problems(got, 2 * x),
            )
        )
    return cases


# ----------------------------------------------------------------------------------------
# shard_map vs vmap (concepts/shard-map-vs-vmap.md)


def shard_map_vs_vmap_cases() -> list[Case]:
    rng = np.random.default_rng(3)
    cases = []
    # 2 rows is the seed exercise's own example; 17 rows divide over one device only.
    for rows, cols in [(8, 3), (24, 5), (2, 2), (17, 3)]:
        x = rng.integers(-4, 5, (rows, cols)).astype(np.float32)
        sums = (x**2).sum(axis=1)
        cases.append(
            Case(
                about=f"x = float32[{rows},{cols}]",
                args=lambda x=x: (jnp.asarray(x),),
                check=lambda got, args, s=sums: stacked_problems(got, s),
            )
        )
    return cases


def stacked_problems(got, sums: np.ndarray) -> Problems:
    expected = np.stack([sums, sums])
    if np.shape(got) != expected.shape and np.shape(got) == expected.shape[::-1]:
        return [
            f"wrong shape: expected {expected.shape}, got {np.shape(got)}: stack the two "
            f"results along a new first axis (axis=0), one row per method."
        ]
    return array_problems(got, expected)


# ----------------------------------------------------------------------------------------
# The data-parallel loop, simulated (training/simulated-data-parallel.md)


def shard_map_simulate_cases() -> list[Case]:
    cases = []
    # Few distinct shapes: each new one costs the learner's eager code a compile.
    for seed, (rows, d_in), shards, features in [
        (0, (8, 4), 2, 3),
        (1, (8, 4), 4, 3),
        (42, (6, 4), 3, 3),
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
    problems = array_problems(got, expected)
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


# ----------------------------------------------------------------------------------------
# Automatic sharding with jax.jit (concepts/automatic-sharding.md)


def column_sums_cases() -> list[Case]:
    cases = []
    for shape, names, (rows, cols) in [
        ((2, 4), ("x", "y"), (8, 4)),
        ((4, 2), ("a", "b"), (8, 6)),
    ]:
        x = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols) - 10
        spec = P(*names)

        def args(x=x, shape=shape, names=names, spec=spec):
            mesh = make_mesh(shape, names, auto=True)
            return place(x, mesh, spec), mesh

        cases.append(
            Case(
                about=f"x = float32[{rows},{cols}] laid out as {spec} on "
                + mesh_words(make_mesh(shape, names, auto=True)),
                args=args,
                check=checks(
                    lambda got, a, x=x: array_problems(got, x.sum(axis=0)),
                    lambda got, a: sharding_problems(got, a[1], P()),
                ),
            )
        )
    return cases


# ----------------------------------------------------------------------------------------
# Explicit sharding (concepts/explicit-sharding.md)


def matmul_rows_cases() -> list[Case]:
    rng = np.random.default_rng(5)
    cases = []
    for rows, inner, cols in [(8, 16, 4), (4, 8, 8)]:
        x = rng.integers(-3, 4, (rows, inner)).astype(np.float32)
        w = rng.integers(-3, 4, (inner, cols)).astype(np.float32)

        def args(x=x, w=w):
            mesh = make_mesh((2, 4), ("x", "y"))
            return place(x, mesh, P("x", "y")), place(w, mesh, P("y", None)), mesh

        cases.append(
            Case(
                about=(
                    f"x = float32[{rows},{inner}] as P('x', 'y'), w = "
                    f"float32[{inner},{cols}] as P('y', None), on {mesh_words(make_mesh((2, 4), ('x', 'y')))}"
                ),
                args=args,
                check=checks(
                    lambda got, a, x=x, w=w: array_problems(got, x @ w),
                    lambda got, a: sharding_problems(got, a[2], P("x", None)),
                ),
            )
        )
    return cases


# ----------------------------------------------------------------------------------------
# Collectives (concepts/collectives.md)


def ring_all_gather_cases() -> list[Case]:
    cases = []
    for devices, length, scale in [(8, 16, -1.0), (4, 12, 1.5)]:
        x = scale * np.arange(length, dtype=np.float32)

        def args(x=x, devices=devices):
            mesh = make_mesh((devices,), ("x",))
            return place(x, mesh, P("x")), mesh

        cases.append(
            Case(
                about=f"x = float32[{length}] split over {mesh_words(make_mesh((devices,), ('x',)))}",
                args=args,
                check=lambda got, a, x=x, n=devices: ring_problems(got, x, n),
            )
        )
    return cases


def ring_problems(got, x: np.ndarray, n: int) -> Problems:
    expected = np.tile(x, (n, 1))
    problems = array_problems(got, expected)
    if problems and np.shape(got) == expected.shape:
        wrong = [d for d in range(n) if not np.allclose(np.asarray(got)[d], x)]
        problems.append(
            f"Row d is the copy device d built; the copies of devices {wrong} are wrong. "
            f"A ring of {n} devices needs {n - 1} hops for every block to reach everyone."
        )
    elif problems and np.shape(got) == (n * len(x),):
        problems.append(
            "Return each device's copy as one row: reshape it to (1, len(x)) inside the "
            "body, with out_specs=P('x')."
        )
    return problems


# ----------------------------------------------------------------------------------------
# One dense layer, three ways (concepts/three-approaches.md)


def manual_dense_cases() -> list[Case]:
    rng = np.random.default_rng(1701)
    cases = []
    for devices, d_in, d_out in [(8, 32, 4), (4, 16, 8)]:
        x = rng.standard_normal(d_in, dtype=np.float32)
        W = rng.standard_normal((d_in, d_out), dtype=np.float32)
        b = rng.standard_normal(d_out, dtype=np.float32)
        expected = 1 / (1 + np.exp(-(x @ W + b)))

        def args(x=x, W=W, b=b, devices=devices):
            mesh = make_mesh((devices,), ("x",))
            return (
                place(x, mesh, P("x")),
                place(W, mesh, P("x", None)),
                place(b, mesh, P()),
                mesh,
            )

        cases.append(
            Case(
                about=(
                    f"x = float32[{d_in}] as P('x'), W = float32[{d_in},{d_out}] as "
                    f"P('x', None), b = float32[{d_out}] as P(), on {devices} devices"
                ),
                args=args,
                check=checks(
                    lambda got, a, e=expected: array_problems(got, e, rtol=1e-5),
                    lambda got, a: sharding_problems(got, a[3], P()),
                ),
            )
        )
    return cases


# ----------------------------------------------------------------------------------------
# Data parallelism (training/data-parallel.md)


def place_batch_cases() -> list[Case]:
    def ok_case(shape, names, batch_shape):
        x = np.arange(math.prod(batch_shape), dtype=np.float32).reshape(batch_shape)
        mesh = make_mesh(shape, names)
        block = (batch_shape[0] // mesh.shape["data"], *batch_shape[1:])
        return Case(
            about=f"x = float32{list(batch_shape)} on {mesh_words(mesh)}",
            args=lambda: (x.copy(), make_mesh(shape, names)),
            check=checks(
                lambda got, a: array_problems(got, x),
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
        ok_case((4, 2), ("data", "model"), (4,)),
        error_case((8,), ("data",), (12, 4)),
        error_case((2, 4), ("data", "model"), (5, 3)),
    ]


# ----------------------------------------------------------------------------------------
# Sharding parameters (training/sharding-parameters.md)


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


# ----------------------------------------------------------------------------------------
# Tensor parallelism (training/tensor-parallel.md)

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


# ----------------------------------------------------------------------------------------
# 2-D parallelism (training/two-d.md)


def per_device_bytes_cases() -> list[Case]:
    mesh_args = ((2, 4), ("data", "model"))
    cases = []
    for shape, dtype, spec in [
        ((64, 32), jnp.float32, P("data", None)),
        ((32, 128), jnp.bfloat16, P(None, "model")),
        ((16, 8, 4), jnp.float32, P("data", "model")),
        ((8, 16), jnp.int8, P(("data", "model"))),
        ((10, 6), jnp.float32, P()),
    ]:
        block = NamedSharding(make_mesh(*mesh_args), spec).shard_shape(shape)
        expected = math.prod(block) * np.dtype(dtype).itemsize
        cases.append(
            Case(
                about=f"{np.dtype(dtype).name}{list(shape)} as {spec} on a mesh "
                "{'data': 2, 'model': 4}",
                args=lambda shape=shape, dtype=dtype, spec=spec: (
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
            about="float32[6, 4] as P('model') on a mesh {'data': 2, 'model': 4}: should raise",
            args=lambda: ((6, 4), jnp.float32, P("model"), make_mesh(*mesh_args)),
            raises=ValueError,
        )
    )
    return cases


def bytes_problems(got, expected: int, block: tuple[int, ...]) -> Problems:
    if isinstance(got, bool) or not isinstance(got, int | np.integer):
        return [f"it returned {kind(got)}; return a whole number of bytes (an int)."]
    if got != expected:
        return [
            f"wrong number of bytes: expected {expected:,} (a block of shape {block} on "
            f"each device), got {int(got):,}."
        ]
    return []


# ----------------------------------------------------------------------------------------
# FSDP (training/fsdp.md)


def fsdp_shard_cases() -> list[Case]:
    from snippets.models import D_HIDDEN, D_IN, D_OUT

    specs = [
        ("MLP", (D_IN, D_HIDDEN, D_OUT), 0, (8,), ("data",)),
        ("Block", (32, 4, 64), 1, (8,), ("data",)),
        ("MLP", (D_IN, D_HIDDEN, D_OUT), 2, (2, 4), ("data", "model")),
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


# ----------------------------------------------------------------------------------------
# Pipeline parallelism (training/pipeline.md)


def gpipe_schedule_cases() -> list[Case]:
    cases = []
    for stages, micro in [(4, 4), (2, 6), (8, 1), (3, 5)]:
        step = np.arange(micro + stages - 1)[None, :] - np.arange(stages)[:, None]
        expected = np.where((step >= 0) & (step < micro), step, -1)
        cases.append(
            Case(
                about=f"num_stages={stages}, num_microbatches={micro}",
                args=lambda s=stages, m=micro: (s, m),
                check=lambda got, a, e=expected: schedule_problems(got, e),
            )
        )
    # Every way the page's rule can be broken: too few stages, too few microbatches, and a
    # count that is not a whole number (2.5 stages would give half a row).
    for stages, micro in [(0, 4), (4, 0), (2.5, 4)]:
        cases.append(
            Case(
                about=f"num_stages={stages}, num_microbatches={micro}: should raise",
                args=lambda s=stages, m=micro: (s, m),
                raises=ValueError,
            )
        )
    return cases


def schedule_problems(got, expected: np.ndarray) -> Problems:
    problems = array_problems(got, expected, exact=True)
    if not problems and not np.issubdtype(np.asarray(got).dtype, np.integer):
        return [
            f"the entries are {np.asarray(got).dtype}, not integers: they number "
            "microbatches, so return an integer array (e.g. .astype(int))."
        ]
    stages, steps = expected.shape
    if problems and np.shape(got) == (stages, steps - stages + 1):
        problems.append(
            "One column per microbatch is too few: the last microbatch enters "
            "stage 0 at the last of those steps and still has to pass through the "
            f"other {stages - 1} stage(s)."
        )
    return problems


# ----------------------------------------------------------------------------------------
# Beyond one host (training/multi-host.md)


def process_rows_cases() -> list[Case]:
    def sharding(order, shape, names, spec):
        devices = np.asarray(jax.devices())[list(order)]
        return NamedSharding(make_mesh(shape, names, devices=devices), spec)

    line, inter = range(8), [0, 4, 1, 5, 2, 6, 3, 7]
    setups = [
        (
            "8 devices in order, P('data'), rows 16, process of devices 0-3",
            (line, (8,), ("data",), P("data")),
            (16, 4),
            range(4),
        ),
        (
            "8 devices in order, P('data'), rows 16, process of devices 4-7",
            (line, (8,), ("data",), P("data")),
            (16, 4),
            range(4, 8),
        ),
        (
            "mesh devices ordered 0,4,1,5,2,6,3,7, P('data'), rows 16, devices 0-3",
            (inter, (8,), ("data",), P("data")),
            (16, 4),
            range(4),
        ),
        (
            "a 2 x 4 mesh {'data', 'model'}, P('data'), rows 8, devices 0-3",
            (line, (2, 4), ("data", "model"), P("data")),
            (8, 2),
            range(4),
        ),
        (
            "a 4 x 2 mesh {'data', 'model'} ordered 0,4,1,5,..., P('data'), rows 8, devices 0-3",
            (inter, (4, 2), ("data", "model"), P("data")),
            (8, 2),
            range(4),
        ),
        (
            "8 devices in order, P('data'), rows 16, process of devices 6, 2, 4, 0 "
            "(listed out of order)",
            (line, (8,), ("data",), P("data")),
            (16, 4),
            [6, 2, 4, 0],
        ),
    ]
    cases = []
    for about, layout, shape, owned in setups:

        def args(layout=layout, shape=shape, owned=owned):
            devices = [jax.devices()[i] for i in owned]
            return sharding(*layout), shape, devices

        expected = sorted(
            {
                row
                for device, index in sharding(*layout)
                .devices_indices_map(shape)
                .items()
                if device.id in owned
                for row in range(shape[0])[index[0]]
            }
        )
        cases.append(
            Case(
                about=about,
                args=args,
                check=lambda got, a, e=expected: rows_problems(got, e),
            )
        )
    return cases


def rows_problems(got, expected: list[int]) -> Problems:
    try:
        rows = [int(r) for r in got]
    except (TypeError, ValueError):
        return [f"it returned {kind(got)}; return a list of row numbers."]
    if rows != sorted(set(rows)):
        return [f"list each row once, in increasing order; got {rows}."]
    if rows != expected:
        return [f"wrong rows: expected {expected}, got {rows}."]
    return []


# ----------------------------------------------------------------------------------------
# Choosing a strategy (training/choosing.md)

GB = 2**30


def mesh_shape_for_cases() -> list[Case]:
    cases = []
    for devices, state, budget, expected in [
        (8, 4 * GB, 16 * GB, (8, 1)),
        (8, 40 * GB, 16 * GB, (2, 4)),
        (8, 100 * GB, 16 * GB, (1, 8)),
        (6, 30 * GB, 16 * GB, (3, 2)),
        (6, 50 * GB, 16 * GB, (1, 6)),
        (8, 32 * GB, 16 * GB, (4, 2)),  # the budget filled exactly: it fits
        (8, 32 * GB + 1, 16 * GB, (2, 4)),  # half a byte over on 2: not rounded away
    ]:
        cases.append(
            Case(
                about=f"{devices} devices, {gib(state)} of state, {gib(budget)} each",
                args=lambda d=devices, s=state, b=budget: (d, s, b),
                check=lambda got, a, e=expected: shape_problems(got, e),
            )
        )
    cases.append(
        Case(
            about="8 devices, 200 GiB of state, 16 GiB each: should raise",
            args=lambda: (8, 200 * GB, 16 * GB),
            raises=ValueError,
        )
    )
    return cases


def gib(n: int) -> str:
    """A byte count as the cases describe it: '32 GiB', or '32 GiB + 1 byte'."""
    whole, rest = divmod(n, GB)
    return f"{whole} GiB" + (f" + {rest} byte{'s' if rest > 1 else ''}" if rest else "")


def shape_problems(got, expected: tuple[int, int]) -> Problems:
    try:
        shape = tuple(int(v) for v in got)
    except (TypeError, ValueError):
        return [f"it returned {kind(got)}; return a tuple (data, model)."]
    if shape != expected:
        return [f"wrong mesh shape: expected {expected}, got {shape}."]
    return []


# ----------------------------------------------------------------------------------------

SHARD_MAP_HINT = (
    "Compute the result inside jax.shard_map(f, mesh=..., in_specs=..., out_specs=...)."
)

EXERCISE_LIST = [
    Exercise(
        name="column_sums",
        title="Column sums, whole on every device (out_shardings)",
        params=("x", "mesh"),
        practises="concepts/automatic-sharding.md",
        solution="snippets/exercises/solutions/column_sums.py:solution",
        cases=column_sums_cases,
        traced=(0,),
        on_device=True,
    ),
    Exercise(
        name="matmul_rows",
        title="An ambiguous contraction made explicit (out_sharding)",
        params=("x", "w", "mesh"),
        practises="concepts/explicit-sharding.md",
        solution="snippets/exercises/solutions/matmul_rows.py:solution",
        cases=matmul_rows_cases,
        traced=(0, 1),
        on_device=True,
        on_error={
            "Contracting dimensions are sharded": (
                "say where the result goes: jnp.matmul(x, w, out_sharding=...)."
            ),
        },
    ),
    Exercise(
        name="shard_map_double",
        title="shard_map basics: double a vector",
        params=("x",),
        practises="concepts/shard-map.md",
        solution="snippets/concepts/shard_map/basics.py:shard-map-double",
        cases=shard_map_double_cases,
        requires=("shard_map",),
        traced=(0,),
        hints={"shard_map": SHARD_MAP_HINT},
    ),
    Exercise(
        name="ring_all_gather",
        title="An all-gather from ppermute steps round a ring",
        params=("x", "mesh"),
        practises="concepts/collectives.md",
        solution="snippets/exercises/solutions/ring_all_gather.py:solution",
        cases=ring_all_gather_cases,
        requires=("shard_map", "ppermute"),
        forbids=("all_gather", "psum", "all_to_all", "psum_scatter"),
        traced=(0,),
        hints={
            "shard_map": SHARD_MAP_HINT,
            "ppermute": "Pass the blocks from device to device with jax.lax.ppermute.",
            "all_gather": "Build the gather from jax.lax.ppermute steps instead.",
            "psum": "Move blocks with jax.lax.ppermute; add nothing up.",
        },
    ),
    Exercise(
        name="shard_map_vs_vmap",
        title="shard_map vs vmap: per-row sums of squares both ways",
        params=("x",),
        practises="concepts/shard-map-vs-vmap.md",
        solution="snippets/concepts/shard_map_vs_vmap/compare.py:shard-map-vs-vmap",
        cases=shard_map_vs_vmap_cases,
        requires=("shard_map",),
        traced=(0,),
        hints={"shard_map": "Compute the second result with jax.shard_map."},
        on_error={
            "not evenly divisible": (
                "the rows of x must split evenly over the mesh: build it from as many "
                "devices as divide B, jax.devices()[:k] with k the largest divisor of B "
                "that is at most jax.device_count()."
            ),
        },
    ),
    Exercise(
        name="manual_dense",
        title="A dense layer with shard_map and psum",
        params=("x", "W", "b", "mesh"),
        practises="concepts/three-approaches.md",
        solution="snippets/exercises/solutions/manual_dense.py:solution",
        cases=manual_dense_cases,
        requires=("shard_map", "psum"),
        traced=(0, 1, 2),
        hints={
            "shard_map": SHARD_MAP_HINT,
            "psum": "Add the devices' partial products with jax.lax.psum(..., 'x').",
        },
        on_error={
            "can't be statically inferred": (
                "each device's x @ W is only its part of the sum, different on every "
                "device; add the parts with jax.lax.psum before returning with "
                "out_specs=P()."
            ),
        },
    ),
    Exercise(
        name="place_batch",
        title="Place a batch over the data axis, checking it divides",
        params=("x", "mesh"),
        practises="training/data-parallel.md",
        solution="snippets/exercises/solutions/place_batch.py:solution",
        cases=place_batch_cases,
    ),
    Exercise(
        name="shard_map_simulate",
        title="NNX shard_map simulation: the data-parallel loop by hand",
        params=("seed", "x", "num_shards", "features"),
        practises="training/simulated-data-parallel.md",
        solution="snippets/training/simulated_data_parallel/simulate.py:simulate",
        cases=shard_map_simulate_cases,
        on_error={
            "Invalid rng value": "seed arrives as a float: nnx.Rngs(int(seed)).",
            "cannot be interpreted as an integer": (
                "num_shards and features arrive as floats: convert them with int()."
            ),
        },
    ),
    Exercise(
        name="sharded_linear",
        title="An nnx.Linear born sharded (with_partitioning)",
        params=("d_in", "d_out", "mesh", "seed"),
        practises="training/sharding-parameters.md",
        solution="snippets/exercises/solutions/sharded_linear.py:solution",
        cases=sharded_linear_cases,
        on_error={
            "An auto mesh context or metadata is required": (
                "create the layer inside `with jax.set_mesh(mesh):`."
            ),
        },
    ),
    Exercise(
        name="tp_specs",
        title="Column and row specs: a tensor-parallel MLP with one all-reduce",
        params=("axis",),
        practises="training/tensor-parallel.md",
        solution="snippets/exercises/solutions/tp_specs.py:solution",
        cases=tp_specs_cases,
    ),
    Exercise(
        name="per_device_bytes",
        title="Bytes per device on a (data, model) mesh",
        params=("shape", "dtype", "spec", "mesh"),
        practises="training/two-d.md",
        solution="snippets/exercises/solutions/per_device_bytes.py:solution",
        cases=per_device_bytes_cases,
    ),
    Exercise(
        name="fsdp_shard",
        title="FSDP: every parameter split over 'data'",
        params=("model", "mesh"),
        practises="training/fsdp.md",
        solution="snippets/exercises/solutions/fsdp_shard.py:solution",
        cases=fsdp_shard_cases,
    ),
    Exercise(
        name="gpipe_schedule",
        title="The GPipe schedule and its bubble",
        params=("num_stages", "num_microbatches"),
        practises="training/pipeline.md",
        solution="snippets/exercises/solutions/gpipe_schedule.py:solution",
        cases=gpipe_schedule_cases,
    ),
    Exercise(
        name="process_rows",
        title="Which rows a process loads",
        params=("sharding", "global_shape", "process_devices"),
        practises="training/multi-host.md",
        solution="snippets/exercises/solutions/process_rows.py:solution",
        cases=process_rows_cases,
    ),
    Exercise(
        name="mesh_shape_for",
        title="A mesh shape for a memory budget",
        params=("num_devices", "state_bytes", "budget_bytes"),
        practises="training/choosing.md",
        solution="snippets/exercises/solutions/mesh_shape_for.py:solution",
        cases=mesh_shape_for_cases,
    ),
]

EXERCISES: dict[str, Exercise] = {ex.name: ex for ex in EXERCISE_LIST}
