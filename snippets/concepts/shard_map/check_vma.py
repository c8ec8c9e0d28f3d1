"""check_vma: JAX types which values vary across devices and checks out_specs.

Run `python -m snippets.concepts.shard_map.check_vma` to print what the page shows.
"""

from collections.abc import Callable

import jax
import numpy as np
from jax import P
from jax.sharding import Mesh


def varying_types(mesh: Mesh, x: jax.Array) -> jax.Array:
    # --8<-- [start:vma-types]
    def typed_sum(block):
        partial = block.sum()
        total = jax.lax.psum(partial, "x")
        print("block:  ", jax.typeof(block))
        print("partial:", jax.typeof(partial))
        print("total:  ", jax.typeof(total))
        return total

    total = jax.shard_map(typed_sum, mesh=mesh, in_specs=P("x"), out_specs=P())(x)
    # --8<-- [end:vma-types]
    return total


def claim_replication(mesh: Mesh, x: jax.Array, local_sum: Callable) -> Callable:
    # --8<-- [start:claim-replication]
    wrong = jax.jit(  # (1)!
        jax.shard_map(local_sum, mesh=mesh, in_specs=P("x"), out_specs=P())
    )
    try:
        wrong(x)
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:claim-replication]
    return wrong


def fix_with_psum(mesh: Mesh, x: jax.Array, local_sum: Callable) -> jax.Array:
    # --8<-- [start:fix-with-psum]
    def summed(block):
        return jax.lax.psum(local_sum(block), "x")  # every device: the same total

    total = jax.shard_map(summed, mesh=mesh, in_specs=P("x"), out_specs=P())(x)
    print(jax.typeof(total), total)
    # --8<-- [end:fix-with-psum]
    return total


def check_vma_off(mesh: Mesh, x: jax.Array, local_sum: Callable) -> jax.Array:
    # --8<-- [start:check-vma-off]
    unchecked = jax.shard_map(
        local_sum, mesh=mesh, in_specs=P("x"), out_specs=P(), check_vma=False
    )
    claimed = unchecked(x)
    print("claimed total:", claimed, " np.sum(x):", np.sum(np.asarray(x)))
    # --8<-- [end:check-vma-off]
    return claimed


def main() -> None:
    from snippets.concepts.shard_map import local_view, partial_sums

    mesh, x = local_view.build_data()
    local_sum, _ = partial_sums.partial_sums(mesh, x)
    varying_types(mesh, x)
    claim_replication(mesh, x, local_sum)
    fix_with_psum(mesh, x, local_sum)
    check_vma_off(mesh, x, local_sum)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
