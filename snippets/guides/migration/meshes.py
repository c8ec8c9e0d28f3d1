"""Meshes and the mesh context, then and now: mesh_utils, make_mesh's axis types,
`with mesh:`, use_mesh and jax.experimental.shard.

Run `python -m snippets.guides.migration.meshes` to print what the page shows.
"""

# --8<-- [start:imports]
import warnings

import jax
import numpy as np
from jax import P
from jax.sharding import AxisType, Mesh

# --8<-- [end:imports]

Caught = list[warnings.WarningMessage]


def old_device_mesh() -> tuple[Mesh, Caught]:
    # --8<-- [start:old-device-mesh]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from jax.experimental import mesh_utils

        grid = mesh_utils.create_device_mesh((2, 4))
        grid_mesh = Mesh(grid, ("data", "model"))
    print("warnings:", len(caught))
    print(grid_mesh)
    # --8<-- [end:old-device-mesh]
    return grid_mesh, caught


def new_device_mesh(grid_mesh: Mesh) -> Mesh:
    # --8<-- [start:new-device-mesh]
    explicit = (AxisType.Explicit, AxisType.Explicit)
    mesh_2d = jax.make_mesh((2, 4), ("data", "model"), axis_types=explicit)
    print(mesh_2d)
    same = np.array_equal(mesh_2d.device_ids, grid_mesh.device_ids)
    print("same device grid:", same)
    # --8<-- [end:new-device-mesh]
    return mesh_2d


def default_axis_types(values: jax.Array) -> tuple[Mesh, object]:
    # --8<-- [start:default-axis-types]
    def double_on_x(v):
        return jax.lax.with_sharding_constraint(2 * v, P("x"))

    unspelled = jax.make_mesh((8,), ("x",))  # no axis_types=, like older code
    print("axis types:", unspelled.axis_types)
    try:
        with jax.set_mesh(unspelled):
            jax.jit(double_on_x)(values)
    except AssertionError as err:
        print(f"AssertionError: {err}")
    # --8<-- [end:default-axis-types]
    return unspelled, double_on_x


def spelled_out_axis_types(
    mesh: Mesh, values: jax.Array, double_on_x
) -> tuple[jax.Array, jax.Array]:
    # --8<-- [start:spelled-out-axis-types]
    auto = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Auto,))
    with jax.set_mesh(auto):  # (1)!
        doubled_auto = jax.jit(double_on_x)(values)

    with jax.set_mesh(mesh):  # (2)!
        doubled_explicit = jax.jit(lambda v: jax.reshard(2 * v, P("x")))(values)

    print(doubled_auto, doubled_auto.sharding.spec)
    print(doubled_explicit, jax.typeof(doubled_explicit))
    # --8<-- [end:spelled-out-axis-types]
    return doubled_auto, doubled_explicit


def old_mesh_context(
    old_mesh: Mesh, values: jax.Array, double_on_x
) -> tuple[jax.Array, Caught]:
    # --8<-- [start:old-mesh-context]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with old_mesh:
            doubled_old = jax.jit(double_on_x)(values)
    for warning in caught:
        print(f"{warning.category.__name__}: {warning.message}")
    print(doubled_old, doubled_old.sharding.spec)
    # --8<-- [end:old-mesh-context]
    return doubled_old, caught


def new_mesh_context(old_mesh: Mesh, values: jax.Array, double_on_x) -> jax.Array:
    # --8<-- [start:new-mesh-context]
    with jax.set_mesh(old_mesh):
        doubled = jax.jit(double_on_x)(values)
        print("inside: ", jax.sharding.get_abstract_mesh())
    print("outside:", jax.sharding.get_abstract_mesh())
    print(doubled, doubled.sharding.spec)
    # --8<-- [end:new-mesh-context]
    return doubled


def removed_mesh_apis(mesh: Mesh, values: jax.Array) -> None:
    # --8<-- [start:removed-mesh-apis]
    try:
        with jax.sharding.use_mesh(mesh):
            pass
    except AttributeError as err:
        print(f"AttributeError: {err}")
    try:
        from jax.experimental.shard import reshard

        reshard(values, P("x"))
    except ModuleNotFoundError as err:
        print(f"ModuleNotFoundError: {err}")
    # --8<-- [end:removed-mesh-apis]


def current_mesh_apis(mesh: Mesh, values: jax.Array) -> jax.Array:
    # --8<-- [start:current-mesh-apis]
    with jax.set_mesh(mesh):
        placed = jax.reshard(values, P("x"))
    print(jax.typeof(placed))
    # --8<-- [end:current-mesh-apis]
    return placed


def main() -> None:
    from snippets.guides.migration.shard_map import build_data, old_shard_map

    mesh, values, _ = build_data()
    old_mesh, _, _ = old_shard_map(values)
    grid_mesh, _ = old_device_mesh()
    new_device_mesh(grid_mesh)
    _, double_on_x = default_axis_types(values)
    spelled_out_axis_types(mesh, values, double_on_x)
    old_mesh_context(old_mesh, values, double_on_x)
    new_mesh_context(old_mesh, values, double_on_x)
    removed_mesh_apis(mesh, values)
    current_mesh_apis(mesh, values)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
