"""The training steps the site shows, compiled for any set of devices from shapes alone.

A page builds real arrays on 8 CPU devices; a TPU or GPU topology described without the
hardware has no memory to hold them. Each builder here takes the devices (CPU, TPU or GPU),
builds the page's mesh over them, describes every argument as a `jax.ShapeDtypeStruct`
carrying the sharding the page gives it, and returns a `Step` whose `compile()` lowers
and compiles the page's own step for that target.

From the pages, unchanged: the model (`snippets.models.MLP`, `train_step`), the sharding
rules and their placement by path (`snippets.training.choosing.strategies`), the step
compiled as a function of state (`snippets.training.choosing.costs.compile_step`), the
FSDP page's step that gathers the weights itself (`fsdp_step_for`) and the pipeline
page's GPipe schedule (`gpipe`). Written here: shapes instead of `jax.device_put`, meshes
scaled from 8 devices to N, and the FSDP page's rule for picking the dimension to split
(its `shard_fsdp` moves real arrays), which a test holds equal to the page's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import optax
from flax import nnx
from jax import P
from jax.sharding import AxisType, Mesh, NamedSharding

from snippets.concepts.three_approaches.layer import dense
from snippets.models import MLP, train_step
from snippets.training.choosing import costs, strategies
from snippets.training.fsdp.step import fsdp_step_for
from snippets.training.pipeline.gpipe import gpipe

# The model every table is about: an MLP 1024 -> 4096 -> 1024 in float32 trained with
# Adam on a batch of 256, large enough that weights, not activations, dominate.
D, HIDDEN, BATCH = 1024, 4096, 256
MICROBATCHES = 8  # the pipeline's batch in 8 microbatches of 32 rows
MODEL_AXIS = 4  # 2-D: the model axis of the page's "2-D (2, 4)", data takes the rest


@dataclass
class Step:
    """A page's step for one set of devices: `step.compile()` lowers and compiles it."""

    compile: Callable[[], jax.stages.Compiled]
    mesh: Mesh
    source: str  # the function on the page that the program comes from
    # Figures the page sets beside the compiled program's (a formula's bytes, say),
    # computed when the program is described; stored in the record as "extra".
    extra: Callable[[], dict] | None = None
    # Also record the schedule of each loop body that holds a collective ("loops").
    loops: bool = False


def abstract_training_state(mesh: Mesh, rules: dict[str, P], batch_spec: P):
    """The MLP, its Adam state and one batch, as shapes placed by `rules`.

    Placement is the choosing page's: `spec_for` finds a rule by path, so Adam's mu and
    nu follow their weight; `check_split` refuses a rule that splits unevenly.
    """

    def build():
        model = MLP(D, HIDDEN, D, rngs=nnx.Rngs(0))
        return model, nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)

    model, optimizer = nnx.eval_shape(build)
    state = nnx.state((model, optimizer))
    for path, leaf in jax.tree.leaves_with_path(state):
        spec = strategies.spec_for(path, rules)
        strategies.check_split(strategies.name_of(path[1:-1]), leaf.shape, spec, mesh)
    placed = jax.tree.map_with_path(
        lambda path, leaf: jax.ShapeDtypeStruct(
            leaf.shape,
            leaf.dtype,
            sharding=NamedSharding(mesh, strategies.spec_for(path, rules)),
        ),
        state,
    )
    nnx.update((model, optimizer), placed)
    batch = jax.ShapeDtypeStruct(
        (BATCH, D), jnp.float32, sharding=NamedSharding(mesh, batch_spec)
    )
    return model, optimizer, batch, batch


def auto_mesh(devices: Sequence, shape: tuple[int, ...], axes: tuple[str, ...]) -> Mesh:
    """As the pages' `jax.make_mesh(..., axis_types=Auto)`, over the given devices.

    make_mesh orders a TPU topology's devices by their place in the torus.
    """
    return jax.make_mesh(
        shape, axes, axis_types=(AxisType.Auto,) * len(axes), devices=list(devices)
    )


def choosing_page_step(devices: Sequence, page_strategy: str, shape: tuple) -> Step:
    """A strategy of the choosing page, its mesh scaled to `shape`."""
    _, axes, rules, batch_spec = strategies.STRATEGIES[page_strategy]
    mesh = auto_mesh(devices, shape, axes)
    args = abstract_training_state(mesh, rules, batch_spec)
    return Step(
        # The page's compile_step: split (model, optimizer), jit the step of the state.
        compile=lambda: costs.compile_step(*args)[0],
        mesh=mesh,
        source="snippets.training.choosing.costs.compile_step",
    )


def fsdp_rules(mesh: Mesh) -> dict[str, P]:
    """The FSDP page's rule: each weight's largest dimension that "data" divides.

    `shard_fsdp` on the page applies this to real arrays; this gives the same specs by
    name without moving anything (tests compare the two on 8 CPU devices).
    """
    n = mesh.shape["data"]
    shapes = {
        "up.kernel": (D, HIDDEN),
        "up.bias": (HIDDEN,),
        "down.kernel": (HIDDEN, D),
        "down.bias": (D,),
    }
    rules = {}
    for name, shape in shapes.items():
        divisible = [d for d, size in enumerate(shape) if size % n == 0]
        if divisible:
            dim = max(divisible, key=lambda d: shape[d])
            rules[name] = P(*[None] * dim, "data")
        else:
            rules[name] = P()
    return rules


def fsdp_page_step(devices: Sequence) -> Step:
    """The FSDP page's step: weights gathered explicitly, gradients left to the compiler."""
    mesh = auto_mesh(devices, (len(devices),), ("data",))
    args = abstract_training_state(mesh, fsdp_rules(mesh), P("data"))
    step = jax.jit(fsdp_step_for(mesh))  # as the page's compile_fsdp
    return Step(
        compile=lambda: step.lower(*args).compile(),
        mesh=mesh,
        source="snippets.training.fsdp.step.fsdp_step_for",
    )


def pipeline_step(devices: Sequence) -> Step:
    """The pipeline page's GPipe forward pass: one MLP stage per device.

    The page places real stages with `place_stages`; here the stacked weights are shapes
    split over "stage", and the batch is cut into MICROBATCHES as `split_microbatches`
    does.
    """
    stages = len(devices)
    mesh = jax.make_mesh(
        (stages,), ("stage",), axis_types=(AxisType.Explicit,), devices=list(devices)
    )
    stage = nnx.eval_shape(lambda: MLP(D, HIDDEN, D, rngs=nnx.Rngs(0)))
    graphdef, state = nnx.split(stage)
    by_stage = NamedSharding(mesh, P("stage"))
    params = jax.tree.map(
        lambda leaf: jax.ShapeDtypeStruct(
            (stages, *leaf.shape), leaf.dtype, sharding=by_stage
        ),
        state,
    )
    xs = jax.ShapeDtypeStruct(
        (MICROBATCHES, BATCH // MICROBATCHES, D),
        jnp.float32,
        sharding=NamedSharding(mesh, P()),
    )
    forward = gpipe(graphdef, mesh, MICROBATCHES)  # jitted by the page
    return Step(
        compile=lambda: forward.lower(params, xs).compile(),
        mesh=mesh,
        source="snippets.training.pipeline.gpipe.gpipe",
    )


def _two_d_shape(n: int) -> tuple[int, int]:
    if n % MODEL_AXIS:
        raise ValueError(f"2-D needs a device count divisible by {MODEL_AXIS}, got {n}")
    return (n // MODEL_AXIS, MODEL_AXIS)


# --8<-- [start:hybrid-mesh]
def hybrid_mesh(devices: Sequence) -> Mesh:
    """A ("slice", "data") mesh over several TPU slices or GPU nodes: "slice" crosses the
    network between them (DCN, InfiniBand), "data" stays on each one's own links (ICI,
    NVLink). `create_hybrid_device_mesh` lays the devices out by their `slice_index`, or
    for GPU nodes (one process each) by their `process_index`."""
    from jax.experimental import mesh_utils

    by_process = len({getattr(d, "slice_index", 0) for d in devices}) < 2
    granules = len({d.process_index if by_process else d.slice_index for d in devices})
    if granules < 2 or len(devices) % granules:
        raise ValueError(
            f"a hybrid mesh needs devices from 2 or more equal slices or nodes, got "
            f"{len(devices)} devices from {granules}: compile for a topology with "
            "num_slices >= 2, or for 2 or more GPU nodes"
        )
    grid = mesh_utils.create_hybrid_device_mesh(
        (1, len(devices) // granules),
        (granules, 1),
        list(devices),
        process_is_granule=by_process,
    )
    return Mesh(grid, ("slice", "data"), axis_types=(AxisType.Auto,) * 2)


# --8<-- [end:hybrid-mesh]


def hybrid_step(devices: Sequence, page_strategy: str) -> Step:
    """A choosing page strategy over several slices or nodes: the batch split over both
    axes, the strategy's weight rules (which name "data") over each one's own devices."""
    _, _, rules, _ = strategies.STRATEGIES[page_strategy]
    mesh = hybrid_mesh(devices)
    args = abstract_training_state(mesh, rules, P(("slice", "data")))
    return Step(
        compile=lambda: costs.compile_step(*args)[0],
        mesh=mesh,
        source="snippets.training.choosing.costs.compile_step",
    )


# Over several slices or nodes: data parallelism across all devices, and FSDP within each
# slice or node with the others as data-parallel replicas of it (hybrid sharding, HSDP).
HYBRID_STRATEGIES: dict[str, Callable[[Sequence], Step]] = {
    "data parallel": lambda d: hybrid_step(d, "data parallel"),
    "FSDP": lambda d: hybrid_step(d, "FSDP"),
}


# name: how to build it for a list of devices. Names are the choosing page's where the
# step is the choosing page's.
STRATEGIES: dict[str, Callable[[Sequence], Step]] = {
    "data parallel": lambda d: choosing_page_step(d, "data parallel", (len(d),)),
    "FSDP": lambda d: choosing_page_step(d, "FSDP", (len(d),)),
    "FSDP, explicit gather": fsdp_page_step,
    "tensor parallel": lambda d: choosing_page_step(d, "tensor parallel", (len(d),)),
    "2-D": lambda d: choosing_page_step(d, "2-D (2, 4)", _two_d_shape(len(d))),
    "pipeline": pipeline_step,
}


# XLA's GPU options that trade memory and overlap for fewer, larger collectives: the
# collective combiners' size thresholds (XLA merges collectives of the same kind up to this
# many bytes) and the latency-hiding scheduler (which issues each collective asynchronously
# and moves independent work between its start and its done). The scaling page compiles the
# choosing page's data-parallel and FSDP steps under each for one H100 node.
GPU_OPTIONS: dict[str, dict[str, int | bool]] = {
    "combine up to 1 MiB": {
        f"xla_gpu_{kind}_combine_threshold_bytes": 2**20
        for kind in ("all_reduce", "all_gather", "reduce_scatter")
    },
    "combine up to 1 GiB": {
        f"xla_gpu_{kind}_combine_threshold_bytes": 2**30
        for kind in ("all_reduce", "all_gather", "reduce_scatter")
    },
    "no latency-hiding scheduler": {"xla_gpu_enable_latency_hiding_scheduler": False},
}


def options_step(page_strategy: str, options: dict) -> Callable[[Sequence], Step]:
    """The choosing page's step, lowered as its compile_step lowers it, and compiled with
    XLA `options` (compile_step itself takes none)."""

    def build(devices: Sequence) -> Step:
        _, axes, rules, batch_spec = strategies.STRATEGIES[page_strategy]
        mesh = auto_mesh(devices, (len(devices),), axes)
        model, optimizer, x, y = abstract_training_state(mesh, rules, batch_spec)
        graphdef, state = nnx.split((model, optimizer))

        def step(state, x, y):
            model, optimizer = nnx.merge(graphdef, state)
            loss = train_step(model, optimizer, x, y)
            return loss, nnx.state((model, optimizer))

        lowered = jax.jit(step).lower(state, x, y)
        return Step(
            compile=lambda: lowered.compile(compiler_options=options),
            mesh=mesh,
            source="snippets.training.choosing.costs.compile_step",
            extra=lambda: {"options": dict(options)},
        )

    return build


OPTION_PROGRAMS: dict[str, Callable[[Sequence], Step]] = {
    f"{strategy}, {name}": options_step(strategy, options)
    for strategy in ("data parallel", "FSDP")
    for name, options in GPU_OPTIONS.items()
}


# The three approaches page: one dense layer (32 inputs, 4 outputs) with x and W's rows split
# over "x", written three ways. Its 32 inputs split over 8 devices only.
LAYER_INPUTS, LAYER_OUTPUTS = 32, 4


def layer_args(mesh: Mesh) -> tuple[jax.ShapeDtypeStruct, ...]:
    """The page's x, W and b as shapes, placed as its `place_layer` places them."""

    def placed(shape, spec):
        return jax.ShapeDtypeStruct(
            shape, jnp.float32, sharding=NamedSharding(mesh, spec)
        )

    return (
        placed((LAYER_INPUTS,), P("x")),
        placed((LAYER_INPUTS, LAYER_OUTPUTS), P("x", None)),
        placed((LAYER_OUTPUTS,), P()),
    )


def _layer_mesh(devices: Sequence, axis_type: AxisType) -> Mesh:
    if LAYER_INPUTS % len(devices):
        raise ValueError(
            f"the layer's {LAYER_INPUTS} inputs do not split over {len(devices)} devices: "
            f"compile it for a target whose device count divides {LAYER_INPUTS}"
        )
    return jax.make_mesh(
        (len(devices),), ("x",), axis_types=(axis_type,), devices=list(devices)
    )


def automatic_step(devices: Sequence) -> Step:
    """`jax.jit(dense)` on an Auto mesh, as the page's `run_automatic`."""
    mesh = _layer_mesh(devices, AxisType.Auto)
    return Step(
        compile=lambda: jax.jit(dense).lower(*layer_args(mesh)).compile(),
        mesh=mesh,
        source="snippets.concepts.three_approaches.automatic.run_automatic",
    )


def explicit_step(devices: Sequence) -> Step:
    """The page's `dense_explicit`: the matmul asks for a replicated result."""
    mesh = _layer_mesh(devices, AxisType.Explicit)

    @jax.jit
    def dense_explicit(x, W, b):
        return jax.nn.sigmoid(jnp.matmul(x, W, out_sharding=P()) + b)

    def compile_it():
        with jax.set_mesh(mesh):
            return dense_explicit.lower(*layer_args(mesh)).compile()

    return Step(
        compile=compile_it,
        mesh=mesh,
        source="snippets.concepts.three_approaches.explicit.run_explicit",
    )


def manual_step(devices: Sequence) -> Step:
    """The page's `dense_block` in `shard_map`: each device's partial product, psum'd."""
    mesh = _layer_mesh(devices, AxisType.Explicit)

    def dense_block(x, W, b):
        return jax.nn.sigmoid(jax.lax.psum(x @ W, "x") + b)

    manual_layer = jax.jit(
        jax.shard_map(
            dense_block,
            mesh=mesh,
            in_specs=(P("x"), P("x", None), P()),
            out_specs=P(),
        )
    )
    return Step(
        compile=lambda: manual_layer.lower(*layer_args(mesh)).compile(),
        mesh=mesh,
        source="snippets.concepts.three_approaches.manual.run_manual",
    )


APPROACHES: dict[str, Callable[[Sequence], Step]] = {
    "automatic": automatic_step,
    "explicit": explicit_step,
    "manual": manual_step,
}
