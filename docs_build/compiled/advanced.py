"""The "Beyond the basics" pages' programs, compiled for any set of devices from shapes alone.

Each builder takes the devices (CPU, or a TPU or GPU topology's), builds the page's mesh over them,
describes the arguments as `jax.ShapeDtypeStruct`s carrying the page's shardings, and returns
a `Step` whose `compile()` compiles the page's own jitted function, unchanged. The sizes are
larger than the pages' (which run on one CPU), so that the TPU compiler plans for work of a
realistic size; what is compiled is the same code.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import math
from collections.abc import Callable, Sequence
from functools import partial

import jax
import jax.numpy as jnp
from flax import nnx
from jax import P
from jax.sharding import AxisType, NamedSharding

from docs_build.compiled import steps as training
from docs_build.compiled.steps import Step
from snippets.advanced.expert_parallel import balance, dispatch, dropless, hybrid
from snippets.advanced.expert_parallel.layer import SPECS as MOE_SPECS
from snippets.advanced.inference import layouts, sequence
from snippets.advanced.manual_control import collective_matmul
from snippets.advanced.overlap import xla_matmul
from snippets.advanced.profiling import program as profiling
from snippets.advanced.sequence_parallel import mlp, ring, ulysses
from snippets.advanced.shapes_and_randomness import uneven
from snippets.advanced.transformer import init, memory, model, step
from snippets.guides.out_of_memory import step as oom
from snippets.models import MLP
from snippets.training.choosing import strategies
from snippets.training.fsdp import zero
from snippets.training.pipeline_training import schedule as pipeline_schedule
from snippets.training.pipeline_training.step import pipeline_step

# The collective matmul: x (rows over "x") @ w (columns over "x"), M = K = N, in bf16.
MATMUL_SIZE = 4096
# Ring attention: one head of 32768 positions of 128 features, q, k and v in bf16.
SEQUENCE, HEAD = 32768, 128
# Ulysses attention at the ring's sizes, with the fewest heads it takes on 8 devices (it
# needs the device count to divide the heads): 8 heads of 32768 positions of 128, bf16.
ULYSSES_HEADS = 8
# The MLP block of the sequence-parallel page, and the profiling page's predict: 8192
# tokens, d = 1024, hidden 4096, f32.
TOKENS, D_MODEL, HIDDEN = 8192, 1024, 4096
# The MoE layer: 1024 tokens per device, d = 1024, hidden 4096, one expert per device,
# capacity factor 1.0, f32.
MOE_TOKENS_PER_DEVICE, MOE_FACTOR = 1024, 1.0
# The decode step: the inference page's own sizes (its module constants), batch 8.
DECODE_BATCH = 8
# The decode step with the cache split along its sequence: multi-query attention (one
# key-value head, which the heads layout cannot split), the page's MAX_LEN slots.
DECODE_KV_HEADS = 1
# The transformer page's train step at a realistic size, on its (data, fsdp, tensor) =
# (2, 2, 2) mesh: about 168 million parameters, a batch of 16 sequences of 1024 tokens.
TRANSFORMER = model.Config(
    vocab=32768, d_model=1024, heads=8, mlp=4096, layers=8, seq=1024
)
TRANSFORMER_BATCH = 16
# The remat page's policies beyond the transformer page's True (full) and False.
REMAT_PAGE = ("dots", "dots_no_batch", "names", "offload")
# The shapes page's dense layer at the page's own sizes: 10 rows of 32 features into 64,
# copied to every device, or padded to 16 rows and split.
UNEVEN_ROWS, UNEVEN_PADDED, UNEVEN_IN, UNEVEN_OUT = 10, 16, 32, 64
# The pipeline-training page's step: one MLP of the training tables (width 1024, hidden
# 4096, f32) per stage, a batch of 4096 rows in 32 microbatches of 128, as the page's
# memory block cuts its batch; more microbatches than stages, so that 1F1B holds fewer.
PIPELINE_BATCH, PIPELINE_MICROBATCHES = 4096, 32
PIPELINE_SCHEDULES = {"GPipe": "gpipe", "1F1B": "1f1b"}


def _line(devices: Sequence, axis: str = "x", axis_type=AxisType.Explicit):
    """A page's mesh: its devices in one axis."""
    return jax.make_mesh(
        (len(devices),), (axis,), axis_types=(axis_type,), devices=devices
    )


def _shaped(mesh, shape, spec, dtype=jnp.float32):
    return jax.ShapeDtypeStruct(shape, dtype, sharding=NamedSharding(mesh, spec))


def _matmul(function: Callable, name: str) -> Callable[[Sequence], Step]:
    def build(devices: Sequence) -> Step:
        mesh = _line(devices)
        shape = (MATMUL_SIZE, MATMUL_SIZE)
        x = _shaped(mesh, shape, P("x", None), jnp.bfloat16)
        w = _shaped(mesh, shape, P(None, "x"), jnp.bfloat16)
        return Step(
            compile=lambda: function.lower(x, w, mesh).compile(),
            mesh=mesh,
            source=f"snippets.advanced.manual_control.collective_matmul.{name}",
        )

    return build


def _xla_matmul(collective: bool) -> Callable[[Sequence], Step]:
    """The overlap page's `sharded_matmul` at the collective matmul's sizes: plain, or
    jitted with the option that asks the target's XLA for its own collective matmul (the
    page's `xla_collective_matmul`, whose GPU option the CPU compiler also takes)."""

    def build(devices: Sequence) -> Step:
        mesh = _line(devices)
        shape = (MATMUL_SIZE, MATMUL_SIZE)
        x = _shaped(mesh, shape, P("x", None), jnp.bfloat16)
        w = _shaped(mesh, shape, P(None, "x"), jnp.bfloat16)
        options, program = {}, xla_matmul.plain_matmul
        if collective and devices[0].platform == "tpu":
            options = xla_matmul.COLLECTIVE_MATMUL["tpu"]
            program = jax.jit(
                xla_matmul.sharded_matmul,
                static_argnames="mesh",
                compiler_options=options,
            )
        elif collective:
            options = xla_matmul.COLLECTIVE_MATMUL["gpu"]
            program = xla_matmul.xla_collective_matmul
        return Step(
            compile=lambda: program.lower(x, w, mesh).compile(),
            mesh=mesh,
            source="snippets.advanced.overlap.xla_matmul.sharded_matmul",
            extra=lambda: {"options": dict(options)},
            loops=True,
        )

    return build


def ring_attention(devices: Sequence) -> Step:
    """The sequence-parallel page's causal `ring_attention`, on its ("seq",) mesh."""
    mesh = _line(devices, "seq")
    q = _shaped(mesh, (SEQUENCE, HEAD), P("seq"), jnp.bfloat16)
    program = jax.jit(ring.ring_attention, static_argnames=("mesh", "causal"))
    return Step(
        compile=lambda: program.lower(q, q, q, mesh=mesh, causal=True).compile(),
        mesh=mesh,
        source="snippets.advanced.sequence_parallel.ring.ring_attention",
    )


def ulysses_attention(devices: Sequence) -> Step:
    """The sequence-parallel page's causal `ulysses_attention`, jitted as its
    `ulysses_program` jits it, on its ("seq",) mesh, at the ring's sizes."""
    mesh = _line(devices, "seq")
    q = _shaped(mesh, (SEQUENCE, ULYSSES_HEADS, HEAD), P("seq"), jnp.bfloat16)
    program = jax.jit(partial(ulysses.ulysses_attention, mesh=mesh, causal=True))
    return Step(
        compile=lambda: program.lower(q, q, q).compile(),
        mesh=mesh,
        source="snippets.advanced.sequence_parallel.ulysses.ulysses_attention",
        extra=lambda: {"heads": ULYSSES_HEADS},
    )


def _mlp_block(function: Callable, name: str, x_spec: P) -> Callable[[Sequence], Step]:
    def build(devices: Sequence) -> Step:
        mesh = _line(devices, "model")
        x = _shaped(mesh, (TOKENS, D_MODEL), x_spec)
        w1 = _shaped(mesh, (D_MODEL, HIDDEN), P(None, "model"))
        w2 = _shaped(mesh, (HIDDEN, D_MODEL), P("model", None))
        program = jax.jit(function, static_argnums=3)
        return Step(
            compile=lambda: program.lower(x, w1, w2, mesh).compile(),
            mesh=mesh,
            source=f"snippets.advanced.sequence_parallel.mlp.{name}",
        )

    return build


def moe_layer(devices: Sequence) -> Step:
    """The expert-parallel page's `moe_layer`, one expert per device."""
    mesh = _line(devices, "expert")
    n = len(devices)
    x = _shaped(mesh, (MOE_TOKENS_PER_DEVICE * n, D_MODEL), P("expert"))
    params = {
        "router": _shaped(mesh, (D_MODEL, n), MOE_SPECS["router"]),
        "w_in": _shaped(mesh, (n, D_MODEL, HIDDEN), MOE_SPECS["w_in"]),
        "w_out": _shaped(mesh, (n, HIDDEN, D_MODEL), MOE_SPECS["w_out"]),
    }
    program = dispatch.moe_layer(mesh, MOE_FACTOR)
    return Step(
        compile=lambda: program.lower(x, params).compile(),
        mesh=mesh,
        source="snippets.advanced.expert_parallel.dispatch.moe_layer",
    )


def ragged_dispatch(devices: Sequence) -> Step:
    """The expert-parallel page's `ragged_to_experts`, jitted as its `ragged-cpu` block
    jits it (`on_experts`), at the MoE layer's sizes: each device's tokens and the
    expert each chose, sent to their experts by one `ragged_all_to_all`."""
    mesh = _line(devices, "expert")
    tokens = MOE_TOKENS_PER_DEVICE * len(devices)
    x = _shaped(mesh, (tokens, D_MODEL), P("expert"))
    expert = _shaped(mesh, (tokens,), P("expert"), jnp.int32)
    program = dropless.on_experts(dropless.ragged_to_experts, mesh, P("expert"))
    return Step(
        compile=lambda: program.lower(x, expert).compile(),
        mesh=mesh,
        source="snippets.advanced.expert_parallel.dropless.ragged_to_experts",
    )


def _balance(gradient: bool) -> Callable[[Sequence], Step]:
    """The expert-parallel page's `balance_loss` at the MoE layer's sizes: the loss as
    its `against_numpy` compiles it, or its gradient for the router, as `descend` takes
    it (the tokens an argument here, not a constant)."""

    def build(devices: Sequence) -> Step:
        mesh = _line(devices, "expert")
        n = len(devices)
        x = _shaped(mesh, (MOE_TOKENS_PER_DEVICE * n, D_MODEL), P("expert"))
        router = _shaped(mesh, (D_MODEL, n), MOE_SPECS["router"])
        aux_loss = balance.balance_loss(mesh, experts=n)
        program = jax.jit(jax.grad(aux_loss, argnums=1) if gradient else aux_loss)
        return Step(
            compile=lambda: program.lower(x, router).compile(),
            mesh=mesh,
            source="snippets.advanced.expert_parallel.balance.balance_loss",
        )

    return build


def _moe_step(fsdp: bool) -> Callable[[Sequence], Step]:
    """The expert-parallel page's `sgd_step` of `hybrid_layer`, at the MoE layer's sizes,
    on its ("data", "expert") mesh of 2 x (devices / 2): as many experts as devices, two
    per "expert" device, copied over "data" or, with fsdp, split over it as well."""

    def build(devices: Sequence) -> Step:
        n = len(devices)
        mesh = jax.make_mesh(
            (2, n // 2),
            ("data", "expert"),
            axis_types=(AxisType.Explicit,) * 2,
            devices=devices,
        )
        specs = hybrid.hybrid_specs(fsdp)
        x = _shaped(mesh, (MOE_TOKENS_PER_DEVICE * n, D_MODEL), hybrid.TOKENS)
        params = {
            "router": _shaped(mesh, (D_MODEL, n), specs["router"]),
            "w_in": _shaped(mesh, (n, D_MODEL, HIDDEN), specs["w_in"]),
            "w_out": _shaped(mesh, (n, HIDDEN, D_MODEL), specs["w_out"]),
        }
        program = hybrid.sgd_step(hybrid.hybrid_layer(mesh, MOE_FACTOR, fsdp))
        return Step(
            compile=lambda: program.lower(params, x, x).compile(),
            mesh=mesh,
            source="snippets.advanced.expert_parallel.hybrid.sgd_step",
        )

    return build


def _decode(layout: str) -> Callable[[Sequence], Step]:
    def build(devices: Sequence) -> Step:
        mesh = _line(devices, "x", AxisType.Auto)  # the inference page's mesh
        _, step, args = layouts.sharded(mesh, layout, DECODE_BATCH)
        return Step(
            compile=lambda: step.lower(*args).compile(),
            mesh=mesh,
            source="snippets.advanced.inference.layouts.sharded",
        )

    return build


def decode_by_sequence(devices: Sequence) -> Step:
    """The inference page's multi-query decode step, its cache split along the sequence."""
    mesh = _line(devices, "x", AxisType.Auto)  # the inference page's mesh
    _, step, args = sequence.by_sequence(
        mesh, DECODE_BATCH, DECODE_KV_HEADS, sequence.MAX_LEN
    )
    return Step(
        compile=lambda: step.lower(*args).compile(),
        mesh=mesh,
        source="snippets.advanced.inference.sequence.by_sequence",
    )


def _transformer(remat: bool | str) -> Callable[[Sequence], Step]:
    def build(devices: Sequence) -> Step:
        mesh = jax.make_mesh(
            (2, 2, 2),
            ("data", "fsdp", "tensor"),
            axis_types=(AxisType.Auto,) * 3,
            devices=devices,
        )
        cfg = dataclasses.replace(TRANSFORMER, remat=remat)
        sharded = init.sharded_init(cfg, mesh)
        tokens = _shaped(
            mesh,
            (TRANSFORMER_BATCH, cfg.seq + 1),
            model.mesh_axes(("batch", None)),
            jnp.int32,
        )
        program = step.make_train_step(sharded, mesh)
        return Step(
            compile=lambda: program.lower(sharded.abstract, tokens).compile(),
            mesh=mesh,
            source="snippets.advanced.transformer.step.make_train_step",
            extra=lambda: {
                "state_formula_bytes": memory.state_bytes(cfg, mesh),
                "tokens_bytes": 4
                * math.prod(tokens.sharding.shard_shape(tokens.shape)),
                # what one int32 scalar (the state holds two) takes on this backend
                "scalar_bytes": _scalar_bytes(mesh),
            },
        )

    return build


def _scalar_bytes(mesh) -> int:
    scalar = _shaped(mesh, (), P(), jnp.int32)
    compiled = jax.jit(lambda a: a + 1).lower(scalar).compile()
    return compiled.memory_analysis().argument_size_in_bytes


def _dense(rows: int, spec: P) -> Callable[[Sequence], Step]:
    def build(devices: Sequence) -> Step:
        mesh = _line(devices)  # the shapes page's Explicit ("x",) mesh
        x = _shaped(mesh, (rows, UNEVEN_IN), spec)
        w = _shaped(mesh, (UNEVEN_IN, UNEVEN_OUT), P())
        return Step(
            compile=lambda: jax.jit(uneven.forward).lower(x, w).compile(),
            mesh=mesh,
            source="snippets.advanced.shapes_and_randomness.uneven.forward",
        )

    return build


def _predict(weight_spec: P) -> Callable[[Sequence], Step]:
    def build(devices: Sequence) -> Step:
        mesh = _line(devices)  # the profiling page's Explicit ("x",) mesh
        x = _shaped(mesh, (TOKENS, D_MODEL), P("x", None))
        w1 = _shaped(mesh, (D_MODEL, HIDDEN), weight_spec)
        w2 = _shaped(mesh, (HIDDEN, D_MODEL), weight_spec)
        return Step(
            compile=lambda: profiling.predict.lower(x, w1, w2).compile(),
            mesh=mesh,
            source="snippets.advanced.profiling.program.predict",
        )

    return build


def _oom(fixes: oom.Fixes) -> Callable[[Sequence], Step]:
    def build(devices: Sequence) -> Step:
        mesh = _line(
            devices, "data"
        )  # the out-of-memory page's Explicit ("data",) mesh
        return Step(
            compile=lambda: oom.compile_step(mesh, oom.Sizes(), fixes),
            mesh=mesh,
            source="snippets.guides.out_of_memory.step.make_step",
        )

    return build


def zero_rules(mesh) -> dict[str, P]:
    """ZeRO-1's placement by name, for `steps.abstract_training_state`: Adam's mu and nu
    split by the FSDP rule, everything else (the parameters, the step counts) whole.

    The FSDP page's `shard_moments` moves real arrays; this gives the same specs without
    moving anything (a test compares the two on 8 CPU devices)."""
    return {
        f"{moment}.{name}": spec
        for moment in ("mu", "nu")
        for name, spec in training.fsdp_rules(mesh).items()
    }


def _quietly(function, *args):
    """Call one of the FSDP page's functions without its printing."""
    with contextlib.redirect_stdout(io.StringIO()):
        return function(*args)


def _held_bytes(model, optimizer) -> dict[str, int]:
    """Bytes one device holds of the parameters and of Adam's two moments, from the
    placed shapes."""

    def shard(leaf) -> int:
        return math.prod(leaf.sharding.shard_shape(leaf.shape)) * leaf.dtype.itemsize

    moments = [
        leaf
        for path, leaf in jax.tree.leaves_with_path(nnx.state(optimizer))
        if {"mu", "nu"} & set(strategies.name_of(path).split("."))
    ]
    held = {
        "param_bytes": sum(map(shard, jax.tree.leaves(nnx.state(model)))),
        "moment_bytes": sum(map(shard, moments)),
    }
    return held


def _zero(stage: int) -> Callable[[Sequence], Step]:
    """The FSDP page's ZeRO-1 or ZeRO-2 step, compiled by its own `compile_zero1` and
    `compile_zero2`, for the training tables' MLP and batch (the page's FSDP step's
    sizes here). ZeRO-1's compile time includes the page's second compile, without
    `out_shardings`; ZeRO-2 needs ZeRO-1's layouts, compiled before its clock starts."""

    def build(devices: Sequence) -> Step:
        mesh = training.auto_mesh(devices, (len(devices),), ("data",))
        model, optimizer, x, y = training.abstract_training_state(
            mesh, zero_rules(mesh), P("data")
        )
        fsdp_model = training.abstract_training_state(
            mesh, training.fsdp_rules(mesh), P("data")
        )[0]
        data = [(x, y)]

        def zero1():
            return _quietly(
                zero.compile_zero1, zero.dp_step, model, optimizer, data, mesh
            )

        def zero2(zero1_program, layouts):
            return _quietly(
                zero.compile_zero2,
                *(model, optimizer, data, fsdp_model, layouts, zero1_program, mesh),
            )[0]

        if stage == 1:
            compile_it = lambda: zero1()[0]  # noqa: E731
        else:
            zero1_program, _, layouts = zero1()
            compile_it = lambda: zero2(zero1_program, layouts)  # noqa: E731
        held = _held_bytes(model, optimizer)
        return Step(
            compile=compile_it,
            mesh=mesh,
            source=f"snippets.training.fsdp.zero.compile_zero{stage}",
            extra=lambda: held,
        )

    return build


def _pipeline_training(kind: str) -> Callable[[Sequence], Step]:
    def build(devices: Sequence) -> Step:
        # place_stages' mesh, with the stacked weights as shapes split over "stage"
        stages = len(devices)
        mesh = _line(devices, "stage")
        graphdef, state = nnx.split(
            nnx.eval_shape(
                lambda: MLP(training.D, training.HIDDEN, training.D, rngs=nnx.Rngs(0))
            )
        )
        params = jax.tree.map(
            lambda leaf: _shaped(mesh, (stages, *leaf.shape), P("stage"), leaf.dtype),
            state,
        )
        rows = PIPELINE_BATCH // PIPELINE_MICROBATCHES
        xs = _shaped(mesh, (PIPELINE_MICROBATCHES, rows, training.D), P())
        table = pipeline_schedule.make_schedule(kind, stages, PIPELINE_MICROBATCHES)
        program = pipeline_step(graphdef, mesh, table, PIPELINE_MICROBATCHES)
        held = max(pipeline_schedule.held(table, stages))
        return Step(
            compile=lambda: program.lower(params, xs, xs).compile(),
            mesh=mesh,
            source="snippets.training.pipeline_training.step.pipeline_step",
            extra=lambda: {
                "microbatches": PIPELINE_MICROBATCHES,
                "rows": rows,
                "steps": max(step for step, _ in table) + 1,
                "held": held,
                # the step's two buffers (activations in, gradients in), held slots each
                "buffer_bytes": 2 * held * rows * training.D * 4,
                "microbatch_bytes": rows * training.D * 4,
            },
        )

    return build


# The out-of-memory page's steps, at the page's own sizes (it compiles them, and runs none).
OOM_PREFIX = "out of memory: "
# Programs a target's compiler may refuse for lack of memory (libtpu checks at compile time):
# the refusal is recorded as the result ("refused"), not as an error.
MAY_NOT_FIT = frozenset(OOM_PREFIX + name for name in oom.STEPS)
# Programs a target's compiler has no code for at the pinned JAX (program -> targets): the
# refusal, an UNIMPLEMENTED error, is recorded as the result ("refused"). Anything else that
# fails there, or another target's refusal, stays an error.
UNIMPLEMENTED_ON: dict[str, frozenset[str]] = {
    "MoE ragged dispatch": frozenset({"cpu"}),
}

PROGRAMS: dict[str, Callable[[Sequence], Step]] = {
    "gather matmul": _matmul(collective_matmul.gather_matmul, "gather_matmul"),
    "ring matmul": _matmul(collective_matmul.ring_matmul, "ring_matmul"),
    "XLA matmul": _xla_matmul(collective=False),
    "XLA collective matmul": _xla_matmul(collective=True),
    "ring attention": ring_attention,
    "Ulysses attention": ulysses_attention,
    "tensor-parallel block": _mlp_block(mlp.tp_block, "tp_block", P()),
    "sequence-parallel block": _mlp_block(mlp.sp_block, "sp_block", P("model", None)),
    "MoE layer": moe_layer,
    "MoE ragged dispatch": ragged_dispatch,
    "MoE balance loss": _balance(gradient=False),
    "MoE balance loss gradient": _balance(gradient=True),
    "MoE step, data x expert": _moe_step(fsdp=False),
    "MoE step, FSDP x expert": _moe_step(fsdp=True),
    "ZeRO-1 step": _zero(1),
    "ZeRO-2 step": _zero(2),
    "decode, cache by batch": _decode("batch"),
    "decode, cache by heads": _decode("heads"),
    "decode, MQA cache by sequence": decode_by_sequence,
    "dense layer, batch copied": _dense(UNEVEN_ROWS, P()),
    "dense layer, batch padded and split": _dense(UNEVEN_PADDED, P("x")),
    "predict, weights split": _predict(P("x", None)),
    "predict, weights whole": _predict(P()),
    "transformer step, remat": _transformer(remat=True),
    "transformer step, no remat": _transformer(remat=False),
    # the remat page's policies (model.REMAT_POLICIES), the same step otherwise
    **{f"transformer step, remat {name}": _transformer(name) for name in REMAT_PAGE},
    **{OOM_PREFIX + name: _oom(fixes) for name, fixes in oom.STEPS.items()},
    **{
        f"pipeline training, {name}": _pipeline_training(kind)
        for name, kind in PIPELINE_SCHEDULES.items()
    },
}
