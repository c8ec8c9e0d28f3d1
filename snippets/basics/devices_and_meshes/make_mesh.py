"""Meshes: jax.make_mesh, jax.sharding.Mesh, axis names, shapes and axis types.

Run `python -m snippets.basics.devices_and_meshes.make_mesh` to print what the page shows.
"""

# --8<-- [start:imports]
import jax
import numpy as np
from jax.sharding import AxisType, Mesh

# --8<-- [end:imports]


def build_mesh() -> Mesh:
    # --8<-- [start:make-mesh]
    mesh = jax.make_mesh(
        (2, 4),  # (1)!
        ("data", "model"),  # (2)!
        axis_types=(AxisType.Explicit, AxisType.Explicit),  # (3)!
    )
    print(mesh)
    print("shape:", dict(mesh.shape))
    print("device ids:")
    print(mesh.device_ids)
    # --8<-- [end:make-mesh]
    return mesh


def same_devices_other_shapes() -> dict[tuple[int, ...], Mesh]:
    # --8<-- [start:other-shapes]
    layouts = {
        (8,): ("x",),
        (4, 2): ("x", "y"),
        (2, 2, 2): ("x", "y", "z"),
    }
    meshes = {}
    for shape, names in layouts.items():
        explicit = (AxisType.Explicit,) * len(shape)
        meshes[shape] = jax.make_mesh(shape, names, axis_types=explicit)
        print(f"{shape!s:>10}  ->  {dict(meshes[shape].shape)}")
    # --8<-- [end:other-shapes]
    return meshes


def mesh_from_devices() -> Mesh:
    # --8<-- [start:mesh-class]
    grid = np.array(jax.devices()).reshape(2, 4)
    classic = Mesh(grid, ("data", "model"))
    print(classic)
    print("axis types:", classic.axis_types)
    # --8<-- [end:mesh-class]
    return classic


def default_axis_types() -> dict[str, tuple[AxisType, ...]]:
    # --8<-- [start:default-axis-types]
    defaults = {
        "jax.make_mesh": jax.make_mesh((8,), ("x",)).axis_types,
        "Mesh": Mesh(np.array(jax.devices()), ("x",)).axis_types,
    }
    print(f"jax {jax.__version__}")
    for constructor, axis_types in defaults.items():
        print(f"{constructor:>14} without axis_types= gives {axis_types}")
    # --8<-- [end:default-axis-types]
    return defaults


def auto_mesh() -> Mesh:
    # --8<-- [start:auto-mesh]
    auto = jax.make_mesh(
        (2, 4), ("data", "model"), axis_types=(AxisType.Auto, AxisType.Auto)
    )
    print(auto)
    # --8<-- [end:auto-mesh]
    return auto


def too_many_devices() -> None:
    # --8<-- [start:too-many-devices]
    try:
        jax.make_mesh(
            (4, 4), ("data", "model"), axis_types=(AxisType.Explicit, AxisType.Explicit)
        )
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:too-many-devices]


def fewer_devices() -> Mesh:
    # --8<-- [start:fewer-devices]
    small = jax.make_mesh(
        (2, 2),
        ("data", "model"),
        axis_types=(AxisType.Explicit, AxisType.Explicit),
        devices=jax.devices()[:4],
    )
    print(small)
    print(small.device_ids)
    # --8<-- [end:fewer-devices]
    return small


def main() -> None:
    build_mesh()
    same_devices_other_shapes()
    mesh_from_devices()
    default_axis_types()
    auto_mesh()
    too_many_devices()
    fewer_devices()


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
