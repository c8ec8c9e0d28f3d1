"""ppermute and all_to_all: blocks travel between devices without being combined.

Run `python -m snippets.concepts.collectives.movement` to print what the page shows.
"""

from collections.abc import Callable

import jax
from jax.sharding import Mesh

# On the page, these are defined by earlier blocks.
from snippets.concepts.collectives.diagram import per_device


def ring_shift(mesh: Mesh, x: jax.Array) -> tuple[Callable, jax.Array, jax.Array]:
    # --8<-- [start:ppermute]
    ring = [(i, (i + 1) % 8) for i in range(8)]  # (1)!

    def shift(block):
        return jax.lax.ppermute(block, "x", perm=ring)

    before, after = per_device(shift, x, mesh)
    # --8<-- [end:ppermute]
    return shift, before, after


def open_shift(mesh: Mesh, x: jax.Array) -> jax.Array:
    # --8<-- [start:ppermute-no-wrap]
    line = [(i, i + 1) for i in range(7)]  # nobody sends to device 0
    _, after = per_device(lambda b: jax.lax.ppermute(b, "x", perm=line), x, mesh)
    print("device 0 receives nothing and holds", after.addressable_shards[0].data[0])
    # --8<-- [end:ppermute-no-wrap]
    return after


def all_to_all(mesh: Mesh, x8: jax.Array) -> tuple[Callable, jax.Array, jax.Array]:
    # --8<-- [start:all-to-all]
    def exchange(block):
        return jax.lax.all_to_all(
            block,
            "x",
            split_axis=0,
            concat_axis=0,
            tiled=True,  # (1)!
        )

    before, after = per_device(exchange, x8, mesh)
    # --8<-- [end:all-to-all]
    return exchange, before, after


def main() -> None:
    from snippets.concepts.collectives import diagram

    mesh, _ = diagram.build_meshes()
    x, x8 = diagram.build_data(mesh)
    ring_shift(mesh, x)
    open_shift(mesh, x)
    all_to_all(mesh, x8)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
