"""all_gather gives every device every block; psum_scatter adds blocks and deals out the sum.

Run `python -m snippets.concepts.collectives.gathers` to print what the page shows.
"""

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax.sharding import Mesh

# On the page, these are defined by earlier blocks.
from snippets.concepts.collectives.diagram import per_device


def all_gather(mesh: Mesh, x: jax.Array) -> tuple[Callable, jax.Array, jax.Array]:
    # --8<-- [start:all-gather]
    def gather(block):
        return jax.lax.all_gather(block, "x")

    before, after = per_device(gather, x, mesh)
    # --8<-- [end:all-gather]
    return gather, before, after


def all_gather_tiled(mesh: Mesh, x: jax.Array) -> tuple[Callable, jax.Array, jax.Array]:
    # --8<-- [start:all-gather-tiled]
    def gather_tiled(block):
        return jax.lax.all_gather(block, "x", tiled=True)

    before, after = per_device(gather_tiled, x, mesh)
    # --8<-- [end:all-gather-tiled]
    return gather_tiled, before, after


def psum_scatter(mesh: Mesh, x8: jax.Array) -> tuple[Callable, jax.Array, jax.Array]:
    # --8<-- [start:psum-scatter]
    def scatter(block):
        return jax.lax.psum_scatter(block, "x")

    before, after = per_device(scatter, x8, mesh)
    # --8<-- [end:psum-scatter]
    return scatter, before, after


def psum_scatter_shapes(mesh: Mesh, x8: jax.Array) -> dict[str, tuple]:
    # --8<-- [start:psum-scatter-shapes]
    grid = jnp.arange(128.0).reshape(16, 8)  # each device: a (2, 8) block
    shapes = {}
    for data, options in [
        (x8, {}),
        (x8, {"tiled": True}),
        (grid, {"scatter_dimension": 1}),
        (grid, {"scatter_dimension": 1, "tiled": True}),
    ]:

        def scatter_with(block, options=options):
            return jax.lax.psum_scatter(block, "x", **options)

        before, after = per_device(scatter_with, data, mesh)
        args = ", ".join(f"{k}={v}" for k, v in options.items()) or "(defaults)"
        shapes[args] = (before.shape[1:], after.shape[1:])
        print(f"{args:<32} {before.shape[1:]} -> {after.shape[1:]}")
    # --8<-- [end:psum-scatter-shapes]
    return shapes


def main() -> None:
    from snippets.concepts.collectives import diagram

    mesh, _ = diagram.build_meshes()
    x, x8 = diagram.build_data(mesh)
    all_gather(mesh, x)
    all_gather_tiled(mesh, x)
    psum_scatter(mesh, x8)
    psum_scatter_shapes(mesh, x8)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
