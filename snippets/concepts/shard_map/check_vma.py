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


def sum_of_copies(mesh: Mesh, w: jax.Array) -> tuple[jax.Array, jax.Array]:
    # --8<-- [start:sum-of-copies]
    def summed_copies(w):
        print("w inside:", jax.typeof(w))  # the same on every device: no V
        return jax.lax.psum(w, "x")

    eight_ws = jax.shard_map(summed_copies, mesh=mesh, in_specs=P(), out_specs=P())(w)
    print("w:       ", w)
    print("psum(w): ", eight_ws)  # (1)!
    same_w = jax.shard_map(
        lambda w: jax.lax.pmean(w, "x"), mesh=mesh, in_specs=P(), out_specs=P()
    )(w)
    print("pmean(w):", same_w)
    # --8<-- [end:sum-of-copies]
    return eight_ws, same_w


def gradient_of_copies(
    mesh: Mesh, x: jax.Array, w: jax.Array
) -> tuple[jax.Array, jax.Array]:
    # --8<-- [start:gradient-of-copies]
    def loss(w, block):
        return (block.reshape(-1, 2) * w).sum()

    def gradient(block, w):
        g = jax.grad(loss)(w, block)
        print("g:", jax.typeof(g))  # no V: already the same on every device
        return g, jax.lax.psum(g, "x")

    g, summed_again = jax.shard_map(
        gradient, mesh=mesh, in_specs=(P("x"), P()), out_specs=(P(), P())
    )(x, w)
    print("g:             ", g)
    print("whole batch:   ", jax.grad(loss)(w, np.asarray(x)))  # on one device
    print("psum(g) again: ", summed_again)
    # --8<-- [end:gradient-of-copies]
    return g, summed_again


def main() -> None:
    from snippets.concepts.shard_map import local_view, partial_sums

    mesh, x = local_view.build_data()
    local_sum, _ = partial_sums.partial_sums(mesh, x)
    varying_types(mesh, x)
    claim_replication(mesh, x, local_sum)
    fix_with_psum(mesh, x, local_sum)
    check_vma_off(mesh, x, local_sum)
    sum_of_copies(mesh, jax.numpy.array([1.0, 10.0]))
    gradient_of_copies(mesh, x, jax.numpy.array([1.0, 10.0]))


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
