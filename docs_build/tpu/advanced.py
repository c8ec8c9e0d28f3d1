"""The "Beyond the basics" pages' programs, compiled for any set of devices from shapes alone.

Each builder takes the devices (CPU, or a TPU topology's), builds the page's mesh over them,
describes the arguments as `jax.ShapeDtypeStruct`s carrying the page's shardings, and returns
a `Step` whose `compile()` compiles the page's own jitted function, unchanged. The sizes are
larger than the pages' (which run on one CPU), so that the TPU compiler plans for work of a
realistic size; what is compiled is the same code.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
from jax import P
from jax.sharding import AxisType, NamedSharding

from docs_build.tpu.steps import Step
from snippets.advanced.expert_parallel import dispatch
from snippets.advanced.expert_parallel.layer import SPECS as MOE_SPECS
from snippets.advanced.inference import layouts
from snippets.advanced.manual_control import collective_matmul
from snippets.advanced.sequence_parallel import mlp, ring

# The collective matmul: x (rows over "x") @ w (columns over "x"), M = K = N, in bf16.
MATMUL_SIZE = 4096
# Ring attention: one head of 32768 positions of 128 features, q, k and v in bf16.
SEQUENCE, HEAD = 32768, 128
# The MLP block of the sequence-parallel page: 8192 tokens, d = 1024, hidden 4096, f32.
TOKENS, D_MODEL, HIDDEN = 8192, 1024, 4096
# The MoE layer: 1024 tokens per device, d = 1024, hidden 4096, one expert per device,
# capacity factor 1.0, f32.
MOE_TOKENS_PER_DEVICE, MOE_FACTOR = 1024, 1.0
# The decode step: the inference page's own sizes (its module constants), batch 8.
DECODE_BATCH = 8


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


PROGRAMS: dict[str, Callable[[Sequence], Step]] = {
    "gather matmul": _matmul(collective_matmul.gather_matmul, "gather_matmul"),
    "ring matmul": _matmul(collective_matmul.ring_matmul, "ring_matmul"),
    "ring attention": ring_attention,
    "tensor-parallel block": _mlp_block(mlp.tp_block, "tp_block", P()),
    "sequence-parallel block": _mlp_block(mlp.sp_block, "sp_block", P("model", None)),
    "MoE layer": moe_layer,
    "decode, cache by batch": _decode("batch"),
    "decode, cache by heads": _decode("heads"),
}
