"""axis_index: each device's position along a mesh axis, the one thing that differs.

Run `python -m snippets.concepts.collectives.positions` to print what the page shows.
"""

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax.sharding import Mesh

# On the page, these are defined by earlier blocks.
from snippets.concepts.collectives.diagram import per_device


def axis_index(mesh_2x4: Mesh, x: jax.Array) -> tuple[Callable, jax.Array, jax.Array]:
    # --8<-- [start:axis-index]
    def position(block):
        return jnp.stack([jax.lax.axis_index("x"), jax.lax.axis_index("y")])

    before, after = per_device(position, x, mesh_2x4)
    # --8<-- [end:axis-index]
    return position, before, after


def main() -> None:
    from snippets.concepts.collectives import diagram

    mesh, mesh_2x4 = diagram.build_meshes()
    x, _ = diagram.build_data(mesh)
    axis_index(mesh_2x4, x)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
