"""Sharding diagrams: jax.debug.visualize_array_sharding on (8,), (2, 4), (4, 2) meshes.

Run `python -m snippets.basics.named_sharding.diagrams` to print what the page shows (drawn in
the terminal; the site turns the drawings into SVG).
"""

# --8<-- [start:imports]
import math

import jax
import jax.numpy as jnp
from jax import P
from jax.sharding import Mesh, NamedSharding

# --8<-- [end:imports]


# --8<-- [start:show-sharding]
def show_sharding(shape: tuple[int, ...], mesh: Mesh, spec: P) -> jax.Array:
    """Place zeros of `shape` on `mesh` as `spec` says; print and draw them."""
    if len(shape) not in (1, 2):
        raise ValueError(f"Only 1-D and 2-D arrays can be drawn, not {shape}.")
    sharding = NamedSharding(mesh, spec)  # (1)!
    for dim, (size, axes) in enumerate(zip(shape, spec, strict=False)):  # (2)!
        axes = (axes,) if isinstance(axes, str) else (axes or ())
        ways = math.prod(mesh.shape[axis] for axis in axes)
        if size % ways:
            raise ValueError(
                f"{spec} splits dimension {dim} of {shape} {ways} ways, but "
                f"{size} is not a multiple of {ways}: change the shape or spec."
            )
    array = jax.device_put(jnp.zeros(shape), sharding)
    print(jax.typeof(array))
    jax.debug.visualize_array_sharding(array)
    return array


# --8<-- [end:show-sharding]


def one_dimensional(mesh_8: Mesh) -> jax.Array:
    # --8<-- [start:vector]
    vector = show_sharding((8,), mesh_8, P("x"))
    # --8<-- [end:vector]
    return vector


def rows_over_a_line(mesh_8: Mesh) -> jax.Array:
    # --8<-- [start:rows]
    rows = show_sharding((8, 4), mesh_8, P("x", None))
    # --8<-- [end:rows]
    return rows


def blocks_2x4(mesh_2x4: Mesh) -> jax.Array:
    # --8<-- [start:blocks-2x4]
    blocks = show_sharding((8, 4), mesh_2x4, P("x", "y"))
    # --8<-- [end:blocks-2x4]
    return blocks


def blocks_4x2(mesh_4x2: Mesh) -> jax.Array:
    # --8<-- [start:blocks-4x2]
    blocks = show_sharding((8, 4), mesh_4x2, P("x", "y"))
    # --8<-- [end:blocks-4x2]
    return blocks


def swapped_axes(mesh_2x4: Mesh) -> jax.Array:
    # --8<-- [start:swapped]
    swapped = show_sharding((8, 4), mesh_2x4, P("y", "x"))
    # --8<-- [end:swapped]
    return swapped


def columns(mesh_2x4: Mesh) -> jax.Array:
    # --8<-- [start:columns]
    cols = show_sharding((8, 4), mesh_2x4, P(None, "y"))
    # --8<-- [end:columns]
    return cols


def halves(mesh_2x4: Mesh) -> jax.Array:
    # --8<-- [start:halves]
    halves = show_sharding((8, 4), mesh_2x4, P("x"))
    # --8<-- [end:halves]
    return halves


def replicated(mesh_2x4: Mesh) -> jax.Array:
    # --8<-- [start:replicated]
    everywhere = show_sharding((8, 4), mesh_2x4, P())
    # --8<-- [end:replicated]
    return everywhere


def main() -> None:
    from snippets.basics.named_sharding import place_arrays

    mesh_8, mesh_2x4, mesh_4x2 = place_arrays.build_meshes()
    one_dimensional(mesh_8)
    rows_over_a_line(mesh_8)
    blocks_2x4(mesh_2x4)
    blocks_4x2(mesh_4x2)
    swapped_axes(mesh_2x4)
    columns(mesh_2x4)
    halves(mesh_2x4)
    replicated(mesh_2x4)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
