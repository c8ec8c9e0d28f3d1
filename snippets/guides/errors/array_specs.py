"""Errors when placing arrays: a dimension the mesh does not divide, a spec longer
than the array, a PartitionSpec used where no mesh is set, and arrays committed to different
devices.

Run `python -m snippets.guides.errors.array_specs` to print what the page shows.
"""

# --8<-- [start:imports]
import jax
import jax.numpy as jnp
from jax import P
from jax.sharding import NamedSharding

# --8<-- [end:imports]

Mesh = jax.sharding.Mesh  # for the type hints; the page's code does not use it


def indivisible(line: Mesh) -> jax.Array:
    # --8<-- [start:indivisible]
    rows = jnp.arange(6.0)  # 6 rows, 8 devices
    try:
        jax.device_put(rows, NamedSharding(line, P("x")))
    except ValueError as err:
        print(f"ValueError: {err}\n")
    double = jax.shard_map(
        lambda r: 2 * r, mesh=line, in_specs=P("x"), out_specs=P("x")
    )
    try:
        double(rows)
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:indivisible]
    return rows


# --8<-- [start:pad-to-multiple]
def pad_to_multiple(rows, mesh, axis):
    """Split dimension 0 of `rows` over mesh axis `axis`, zero-padded to fit.

    Returns the padded array and a mask that is True for the real rows.
    """
    if axis not in mesh.axis_names:
        raise ValueError(
            f"the mesh has no axis {axis!r}; its axes are {mesh.axis_names}."
        )
    if jnp.ndim(rows) == 0:
        raise ValueError("a scalar has no rows; pass an array of rank >= 1.")
    count = mesh.shape[axis]
    extra = -rows.shape[0] % count  # rows to add to reach a multiple of count
    padding = [(0, extra)] + [(0, 0)] * (rows.ndim - 1)
    by_rows = NamedSharding(mesh, P(axis))
    padded = jax.device_put(jnp.pad(rows, padding), by_rows)
    is_real = jnp.arange(padded.shape[0]) < rows.shape[0]
    real = jax.device_put(is_real, by_rows)
    return padded, real


# --8<-- [end:pad-to-multiple]


def padded_fix(line: Mesh, rows: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    # --8<-- [start:padded-fix]
    padded, real = pad_to_multiple(rows, line, "x")
    doubled = jax.shard_map(
        lambda r: 2 * r, mesh=line, in_specs=P("x"), out_specs=P("x")
    )(padded)
    total = jnp.sum(jnp.where(real, doubled, 0.0))  # (1)!
    print(jax.typeof(padded), padded)
    print(jax.typeof(real), real)
    print("sum of the doubled real rows:", total)
    # --8<-- [end:padded-fix]
    return padded, real, doubled


def too_long(mesh: Mesh, line: Mesh) -> jax.Array:
    # --8<-- [start:too-long]
    vector = jnp.arange(8.0)  # rank 1
    try:
        jax.device_put(vector, NamedSharding(mesh, P("x", "y")))  # 2 entries
    except ValueError as err:
        print(f"ValueError: {err}\n")
    try:
        keep = jax.shard_map(
            lambda v: v, mesh=line, in_specs=P("x", None), out_specs=P("x")
        )
        keep(vector)
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:too-long]
    return vector


def too_long_fix(mesh: Mesh, vector: jax.Array) -> tuple[jax.Array, jax.Array]:
    # --8<-- [start:too-long-fix]
    split = jax.device_put(vector, NamedSharding(mesh, P(("x", "y"))))  # (1)!
    grid = jax.device_put(
        vector.reshape(2, 4), NamedSharding(mesh, P("x", "y"))
    )  # (2)!
    print(jax.typeof(split), jax.typeof(grid))
    # --8<-- [end:too-long-fix]
    return split, grid


def no_mesh(line: Mesh, vector: jax.Array) -> None:
    # --8<-- [start:no-mesh]
    attempts = {
        "device_put": lambda: jax.device_put(vector, P("x")),
        "reshard": lambda: jax.reshard(vector, P("x")),
        "shard_map": lambda: jax.shard_map(
            lambda v: 2 * v, in_specs=P("x"), out_specs=P("x")
        )(vector),
    }
    for name, attempt in attempts.items():
        try:
            attempt()
        except ValueError as err:
            print(f"{name}: ValueError: {err}")
    # --8<-- [end:no-mesh]


def no_mesh_fix(line: Mesh, vector: jax.Array) -> tuple[jax.Array, jax.Array]:
    # --8<-- [start:no-mesh-fix]
    with jax.set_mesh(line):  # (1)!
        placed = jax.reshard(vector, P("x"))
        double = jax.shard_map(lambda v: 2 * v, in_specs=P("x"), out_specs=P("x"))
        doubled = double(placed)
    also_placed = jax.reshard(vector, NamedSharding(line, P("x")))  # (2)!
    print(jax.typeof(placed), jax.typeof(doubled), jax.typeof(also_placed))
    # --8<-- [end:no-mesh-fix]
    return placed, doubled


def incompatible_devices() -> tuple[jax.Array, jax.Array]:
    # --8<-- [start:incompatible-devices]
    floating = jnp.ones(4)  # (1)!
    on_1 = jax.device_put(jnp.ones(4), jax.devices()[1])
    on_2 = jax.device_put(jnp.ones(4), jax.devices()[2])
    print("committed:", floating.committed, on_1.committed, on_2.committed)
    print("floating + on_1 runs on", (floating + on_1).devices())  # (2)!
    try:
        on_1 + on_2
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:incompatible-devices]
    return on_1, on_2


def incompatible_devices_fix(on_1: jax.Array, on_2: jax.Array) -> jax.Array:
    # --8<-- [start:incompatible-devices-fix]
    moved = jax.device_put(on_2, on_1.sharding)  # on device 1 now
    total = on_1 + moved
    print(total, total.devices())
    # --8<-- [end:incompatible-devices-fix]
    return total


def main() -> None:
    from snippets.guides.errors.device_setup import meshes_that_fit

    mesh, line, _ = meshes_that_fit()
    rows = indivisible(line)
    padded_fix(line, rows)
    vector = too_long(mesh, line)
    too_long_fix(mesh, vector)
    no_mesh(line, vector)
    no_mesh_fix(line, vector)
    incompatible_devices_fix(*incompatible_devices())


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
