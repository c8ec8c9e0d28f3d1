"""shard_map inside jax.jit: the body's collectives, and the boundary's, in the compiled program.

Run `python -m snippets.concepts.shard_map.inside_jit` to print what the page shows.
"""

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax import P
from jax.sharding import Mesh, NamedSharding

from snippets.hlo import print_collectives  # the page includes it from snippets/hlo.py


def compiled_collectives(
    mesh: Mesh, x: jax.Array, global_sum: Callable
) -> tuple[jax.stages.Compiled, jax.stages.Compiled]:
    # --8<-- [start:jit-collectives]
    total = jax.shard_map(global_sum, mesh=mesh, in_specs=P("x"), out_specs=P())
    double = jax.shard_map(
        lambda b: b * 2, mesh=mesh, in_specs=P("x"), out_specs=P("x")
    )

    @jax.jit
    def mean(x):
        return total(x) / x.size  # (1)!

    print("mean(x) =", mean(x))
    compiled_mean = mean.lower(x).compile()
    compiled_double = jax.jit(double).lower(x).compile()
    print("-- mean: psum in the body")
    print_collectives(compiled_mean)
    print("-- jax.jit(double): no collective in the body")
    print_collectives(compiled_double)
    # --8<-- [end:jit-collectives]
    return compiled_mean, compiled_double


def boundary_collectives(auto: Mesh) -> jax.stages.Compiled:
    # --8<-- [start:boundary]
    split = jax.device_put(jnp.arange(16.0), NamedSharding(auto, P("x")))
    whole_block = jax.shard_map(  # the body wants all of x on every device
        lambda b: b * 2, mesh=auto, in_specs=P(), out_specs=P()
    )
    compiled = jax.jit(whole_block).lower(split).compile()
    print("-- in_specs=P(), x split over the Auto axis x")
    print_collectives(compiled)
    # --8<-- [end:boundary]
    return compiled


def main() -> None:
    from snippets.concepts.shard_map import explicit_inputs, local_view, partial_sums

    mesh, x = local_view.build_data()
    global_sum, _ = partial_sums.total(mesh, x)
    compiled_collectives(mesh, x, global_sum)
    auto, _ = explicit_inputs.auto_mesh(jnp.arange(16.0))
    boundary_collectives(auto)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
