"""Write GPU programs, compiled without a GPU, as fixtures for the HLO readers' tests.

    nox -s gpu -- --help   (once, to build .nox/gpu), then
    JAX_PLATFORMS=cpu .nox/gpu/bin/python -m docs_build.compiled.gpu_fixtures

In `nox -s gpu`'s environment, the only one with the CUDA plugin. `JAX_PLATFORMS=cpu` keeps
the plugin from looking for a GPU when JAX starts; `get_topology_desc` then describes 8
H100s on one host from the card's spec (docs_build/compiled/specs/h100_sxm.txtpb), and XLA
compiles for them (its SPMD partitioner, collective passes and scheduler; no autotuning).
Nothing runs on a GPU. Each fixture is trimmed as `docs_build.compiled.fixtures.trim` trims
the TPU ones (debug tables, metadata, computations with no collective or matmul) and
starts with comment lines saying how it was made.
"""

from __future__ import annotations

import os
import sys

TOPOLOGY = "h100:1x8"  # one node of 8 H100s (docs_build/compiled/targets.py)


def h100_devices() -> list:
    from docs_build.compiled.targets import devices

    return devices(TOPOLOGY)


def header(what: str) -> str:
    import jax

    return (
        f"// {what}\n"
        f"// Compiled without a GPU for 8 x H100 SXM ({TOPOLOGY}) with jax and\n"
        f"// jaxlib {jax.__version__} and jax-cuda12-plugin, JAX_PLATFORMS=cpu:\n"
        "// `JAX_PLATFORMS=cpu python -m docs_build.compiled.gpu_fixtures` (see its docstring);\n"
        "// trimmed as docs_build.compiled.fixtures.trim trims the TPU fixtures.\n"
    )


def step_text(strategy: str) -> str:
    """The choosing page's step, as the TPU tables compile it (docs_build.compiled.steps)."""
    from docs_build.compiled import steps

    return steps.STRATEGIES[strategy](h100_devices()).compile().as_text()


def xla_collective_matmul_text() -> str:
    """The overlap page's `sharded_matmul` with XLA's collective matmul asked for, as the
    results compile it (docs_build.compiled.advanced)."""
    from docs_build.compiled import advanced

    return (
        advanced.PROGRAMS["XLA collective matmul"](h100_devices()).compile().as_text()
    )


def ragged_dispatch_text() -> str:
    """The expert-parallel page's `ragged_to_experts`, as the results compile it."""
    from docs_build.compiled import advanced

    return advanced.PROGRAMS["MoE ragged dispatch"](h100_devices()).compile().as_text()


def shard_map_text() -> str:
    """Every kind of collective on a (2, 4) mesh, and a psum in a scan of 3."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax import P
    from jax.sharding import Mesh, NamedSharding

    mesh = Mesh(np.array(h100_devices()).reshape(2, 4), ("x", "y"))

    def f(x):
        shifted = jax.lax.ppermute(x, "y", [(i, (i + 1) % 4) for i in range(4)])
        swapped = jax.lax.all_to_all(x, "y", 0, 0, tiled=True)
        scattered = jax.lax.psum_scatter(x, "y", scatter_dimension=0, tiled=True)
        summed = jax.lax.psum(x, "x")
        gathered = jax.lax.all_gather(x, ("x", "y"), tiled=True)

        def body(c, _):
            return c + jax.lax.psum(c, "y"), None

        looped, _ = jax.lax.scan(body, x, None, length=3)
        return shifted, swapped, scattered, summed, gathered, looped

    spec = P("x", "y")
    mapped = jax.jit(
        jax.shard_map(f, mesh=mesh, in_specs=(spec,), out_specs=P("x"), check_vma=False)
    )
    arg = jax.ShapeDtypeStruct(
        (256, 1024), jnp.float32, sharding=NamedSharding(mesh, spec)
    )
    return mapped.lower(arg).compile().as_text()


FIXTURES = {
    "gpu_h100x8_dp_step.hlo": (
        "The choosing page's data-parallel step (MLP 1024 -> 4096 -> 1024, f32, Adam, "
        "batch 256).",
        lambda: step_text("data parallel"),
    ),
    "gpu_h100x8_fsdp_step.hlo": (
        "The choosing page's FSDP step (MLP 1024 -> 4096 -> 1024, f32, Adam, batch 256).",
        lambda: step_text("FSDP"),
    ),
    "gpu_h100x8_shard_map.hlo": (
        "shard_map on a (2, 4) mesh: ppermute, all_to_all, psum_scatter, psum, "
        "all_gather, and a psum in a scan of 3.",
        shard_map_text,
    ),
    "gpu_h100x8_xla_collective_matmul.hlo": (
        "The overlap page's sharded_matmul (4096 x 4096 bf16, x's rows and w's columns "
        "over 8) with xla_gpu_threshold_for_windowed_einsum_mib=0.",
        xla_collective_matmul_text,
    ),
    "gpu_h100x8_ragged_dispatch.hlo": (
        "The expert-parallel page's ragged_to_experts (1024 tokens of 1024 f32 per "
        "device, one expert per device): the counts' all-gather, one ragged-all-to-all.",
        ragged_dispatch_text,
    ),
}


def main() -> None:
    if os.environ.get("JAX_PLATFORMS") != "cpu":
        sys.exit("set JAX_PLATFORMS=cpu: the CUDA plugin must not look for a GPU")
    from docs_build.compiled.fixtures import FIXTURES as DIRECTORY
    from docs_build.compiled.fixtures import trim

    for name, (what, make) in FIXTURES.items():
        text = header(what) + trim(make())
        (DIRECTORY / name).write_text(text)
        print(f"wrote {name}: {len(text):,} characters")


if __name__ == "__main__":
    main()
