"""What the page says about other backends: the CPU stand-in and the TPU programs the site
compiled (docs_build/compiled/results/) differ in memory and in plan, and neither way round is
a rule. The concepts pages (automatic sharding, collectives, three approaches) quote the same
FSDP plans."""

import collections
import re

import jax
import jax.numpy as jnp
from jax import P
from jax.sharding import NamedSharding

from docs_build.compiled import pages
from docs_build.planner import tiled


def kinds(target: str, strategy: str) -> set[str]:
    p = pages.program(target, strategy)
    return set(collections.Counter(c["kind"] for c in p["collectives"]))


def test_a_small_block_has_the_same_elements_but_a_tpu_pads_it(line_mesh):
    x = jax.device_put(jnp.zeros((8, 4), jnp.float32), NamedSharding(line_mesh, P("x")))
    block = x.addressable_shards[0].data
    assert block.shape == (1, 4) and block.nbytes == 16
    # 512 bytes compiled for v5e:2x4 and v5p:2x2x2 (argument_size_in_bytes), as the
    # planner's tile model, which is held to compiled TPU programs, counts it.
    assert tiled(block.shape) * block.itemsize == 512


def test_the_fsdp_step_sums_gradients_differently_on_each_target():
    assert "reduce-scatter" not in kinds("cpu", "FSDP")
    assert "all-reduce" in kinds("cpu", "FSDP")
    assert "reduce-scatter" in kinds("v5e:2x4", "FSDP")
    assert "reduce-scatter" not in kinds("v5p:2x2x2", "FSDP")
    assert "all-reduce" in kinds("v5p:2x2x2", "FSDP")
    for target in ("v5e:8x8", "v5e:16x16"):
        assert kinds(target, "FSDP") == {"all-reduce"}


def test_the_cpu_backend_does_emit_a_reduce_scatter_when_asked(line_mesh):
    # The old sentence said it never does: a psum_scatter in a shard_map becomes one.
    scatter = jax.jit(
        jax.shard_map(
            lambda b: jax.lax.psum_scatter(b, "x", tiled=True),
            mesh=line_mesh,
            in_specs=P("x"),
            out_specs=P("x"),
        )
    )
    x = jax.device_put(jnp.arange(64.0), NamedSharding(line_mesh, P("x")))
    hlo = scatter.lower(x).compile().as_text()
    assert re.search(r"\sreduce-scatter\(", hlo)


def test_the_fsdp_step_reduce_scatters_its_gradients_on_the_gpus():
    """devices-and-meshes, automatic-sharding, collectives: "the programs for 8 to 64 H100
    GPUs reduce-scatter them as the FSDP page teaches"."""
    for target in ("h100:1x8", "h100:2x8", "h100:8x8"):
        assert kinds(target, "FSDP") == {"all-gather", "reduce-scatter", "all-reduce"}
        gradients = [
            c
            for c in pages.program(target, "FSDP")["collectives"]
            if c["kind"] == "all-reduce"
        ]
        assert [c["shapes"] for c in gradients] == [["f32[]"]]  # only the loss
