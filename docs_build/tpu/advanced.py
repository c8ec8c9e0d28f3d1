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
from snippets.advanced.manual_control import collective_matmul

# The collective matmul: x (rows over "x") @ w (columns over "x"), M = K = N, in bf16.
MATMUL_SIZE = 4096


def _line(devices: Sequence):
    """The manual-control page's mesh: its devices in one Explicit axis "x"."""
    return jax.make_mesh(
        (len(devices),), ("x",), axis_types=(AxisType.Explicit,), devices=devices
    )


def _matmul(function: Callable, name: str) -> Callable[[Sequence], Step]:
    def build(devices: Sequence) -> Step:
        mesh = _line(devices)

        def placed(spec):
            return jax.ShapeDtypeStruct(
                (MATMUL_SIZE, MATMUL_SIZE),
                jnp.bfloat16,
                sharding=NamedSharding(mesh, spec),
            )

        x, w = placed(P("x", None)), placed(P(None, "x"))
        return Step(
            compile=lambda: function.lower(x, w, mesh).compile(),
            mesh=mesh,
            source=f"snippets.advanced.manual_control.collective_matmul.{name}",
        )

    return build


PROGRAMS: dict[str, Callable[[Sequence], Step]] = {
    "gather matmul": _matmul(collective_matmul.gather_matmul, "gather_matmul"),
    "ring matmul": _matmul(collective_matmul.ring_matmul, "ring_matmul"),
}
# The files whose text decides what these programs compile to (driver.INPUTS adds them).
SOURCES = ("snippets/advanced/manual_control/collective_matmul.py",)
