"""psum, pmean and pmax: every device gets the sum, mean or maximum of all the blocks.

Run `python -m snippets.concepts.collectives.reductions` to print what the page shows.
"""

from collections.abc import Callable

import jax
from jax.sharding import Mesh

# On the page, these are defined by earlier blocks.
from snippets.concepts.collectives.diagram import per_device


def psum(mesh: Mesh, x: jax.Array) -> tuple[Callable, jax.Array, jax.Array]:
    # --8<-- [start:psum]
    def total(block):
        return jax.lax.psum(block, "x")

    before, after = per_device(total, x, mesh)
    # --8<-- [end:psum]
    return total, before, after


def psum_one_axis(
    mesh_2x4: Mesh, x: jax.Array
) -> tuple[Callable, jax.Array, jax.Array]:
    # --8<-- [start:psum-over-y]
    def row_total(block):
        return jax.lax.psum(block, "y")  # add along y only

    before, after = per_device(row_total, x, mesh_2x4)
    # --8<-- [end:psum-over-y]
    return row_total, before, after


def pmean(mesh: Mesh, x: jax.Array) -> tuple[Callable, jax.Array, jax.Array]:
    # --8<-- [start:pmean]
    def mean(block):
        return jax.lax.pmean(block, "x")

    before, after = per_device(mean, x, mesh)
    # --8<-- [end:pmean]
    return mean, before, after


def pmax(mesh: Mesh, x: jax.Array) -> tuple[Callable, jax.Array, jax.Array]:
    # --8<-- [start:pmax]
    def largest(block):
        return jax.lax.pmax(block, "x")

    before, after = per_device(largest, x, mesh)
    # --8<-- [end:pmax]
    return largest, before, after


def main() -> None:
    from snippets.concepts.collectives import diagram

    mesh, mesh_2x4 = diagram.build_meshes()
    x, _ = diagram.build_data(mesh)
    psum(mesh, x)
    psum_one_axis(mesh_2x4, x)
    pmean(mesh, x)
    pmax(mesh, x)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
