"""Errors before any array exists: the device count, and a mesh too large for it.

Run `python -m snippets.guides.errors.device_setup` to print what the page shows.
"""

# --8<-- [start:imports]
import math

import jax
from jax.sharding import AxisType

# --8<-- [end:imports]

Mesh = jax.sharding.Mesh  # for the type hints; the page's code does not use it


def too_late() -> None:
    # --8<-- [start:too-late]
    print("devices:", jax.device_count())  # any JAX call starts the backend
    try:
        jax.config.update("jax_num_cpu_devices", 4)
    except RuntimeError as err:
        print(f"RuntimeError: {err}")
    # --8<-- [end:too-late]


def count_is_fixed() -> int:
    # --8<-- [start:count-is-fixed]
    jax.config.update("jax_num_cpu_devices", 8)  # the count it has: accepted
    print("jax_num_cpu_devices:", jax.config.jax_num_cpu_devices)
    print("devices:", jax.device_count(), {d.platform for d in jax.devices()})
    # --8<-- [end:count-is-fixed]
    return jax.device_count()


def mesh_too_large() -> None:
    # --8<-- [start:mesh-too-large]
    try:
        jax.make_mesh((4, 4), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:mesh-too-large]


# --8<-- [start:mesh-for-all-devices]
def mesh_for_all_devices(shape, names):
    """Explicit axes over all the devices, or a ValueError saying why not."""
    shape, names = tuple(shape), tuple(names)
    if len(shape) != len(names):
        raise ValueError(
            f"{len(shape)} axis sizes {shape} but {len(names)} names {names}."
        )
    available = jax.device_count()
    if math.prod(shape) != available:
        raise ValueError(
            f"mesh shape {shape} needs {math.prod(shape)} devices and this "
            f"program has {available}: choose sizes whose product is "
            f"{available}."
        )
    explicit = (AxisType.Explicit,) * len(shape)
    return jax.make_mesh(shape, names, axis_types=explicit)


# --8<-- [end:mesh-for-all-devices]


def meshes_that_fit() -> tuple[Mesh, Mesh, Mesh]:
    # --8<-- [start:meshes-that-fit]
    mesh = mesh_for_all_devices((2, jax.device_count() // 2), ("x", "y"))  # (1)!
    line = mesh_for_all_devices((jax.device_count(),), ("x",))
    quarter = jax.make_mesh(  # (2)!
        (2, 2),
        ("x", "y"),
        axis_types=(AxisType.Explicit,) * 2,
        devices=jax.devices()[:4],
    )
    for m in (mesh, line, quarter):
        print(dict(m.shape), "on devices", m.device_ids.ravel().tolist())
    try:
        mesh_for_all_devices((4, 4), ("x", "y"))
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:meshes-that-fit]
    return mesh, line, quarter


def main() -> None:
    too_late()
    count_is_fixed()
    mesh_too_large()
    meshes_that_fit()


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
