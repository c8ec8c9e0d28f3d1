"""A sum over a sharded array: per-device partial sums, then psum for the total.

Run `python -m snippets.concepts.shard_map.partial_sums` to print what the page shows.
"""

from collections.abc import Callable

import jax
import numpy as np
from jax import P
from jax.sharding import Mesh


def partial_sums(mesh: Mesh, x: jax.Array) -> tuple[Callable, jax.Array]:
    # --8<-- [start:partial-sums]
    def local_sum(block):
        return block.sum(keepdims=True)  # (1)!

    sums = jax.shard_map(local_sum, mesh=mesh, in_specs=P("x"), out_specs=P("x"))
    partials = sums(x)
    print(jax.typeof(partials), partials)
    print("np.sum(x) =", np.sum(np.asarray(x)))
    # --8<-- [end:partial-sums]
    return local_sum, partials


def total(mesh: Mesh, x: jax.Array) -> tuple[Callable, jax.Array]:
    # --8<-- [start:psum-total]
    def global_sum(block):
        return jax.lax.psum(block.sum(), "x")  # (1)!

    total = jax.shard_map(global_sum, mesh=mesh, in_specs=P("x"), out_specs=P())(x)
    print(jax.typeof(total), total)
    print("equals np.sum(x):", total == np.sum(np.asarray(x)))
    # --8<-- [end:psum-total]
    return global_sum, total


def main() -> None:
    from snippets.concepts.shard_map import local_view

    mesh, x = local_view.build_data()
    partial_sums(mesh, x)
    total(mesh, x)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
