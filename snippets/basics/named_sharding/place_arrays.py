"""Placing an array on a mesh: NamedSharding, jax.device_put, what the result records.

Run `python -m snippets.basics.named_sharding.place_arrays` to print what the page shows.
"""

# --8<-- [start:imports]
import jax
import jax.numpy as jnp
import numpy as np
from jax import P
from jax.sharding import AxisType, NamedSharding

# --8<-- [end:imports]

Mesh = jax.sharding.Mesh  # for the type hints; the page's code does not use it


def build_meshes() -> tuple[Mesh, Mesh, Mesh]:
    # --8<-- [start:meshes]
    explicit = AxisType.Explicit
    mesh_8 = jax.make_mesh((8,), ("x",), axis_types=(explicit,))
    mesh_2x4 = jax.make_mesh((2, 4), ("x", "y"), axis_types=(explicit, explicit))
    mesh_4x2 = jax.make_mesh((4, 2), ("x", "y"), axis_types=(explicit, explicit))
    for m in (mesh_8, mesh_2x4, mesh_4x2):
        print(m)
    # --8<-- [end:meshes]
    return mesh_8, mesh_2x4, mesh_4x2


def unplaced_array() -> jax.Array:
    # --8<-- [start:unplaced]
    x = jnp.arange(32.0).reshape(8, 4)
    print(x.sharding)
    print("devices:", x.devices())
    # --8<-- [end:unplaced]
    return x


def put_on_mesh(x: jax.Array, mesh_8: Mesh) -> tuple[NamedSharding, jax.Array]:
    # --8<-- [start:device-put]
    by_rows = NamedSharding(mesh_8, P("x"))  # (1)!
    x_rows = jax.device_put(x, by_rows)  # (2)!
    print(x_rows.sharding)
    print("x itself is still on", x.devices())
    # --8<-- [end:device-put]
    return by_rows, x_rows


def put_numpy(by_rows: NamedSharding, x_rows: jax.Array) -> jax.Array:
    # --8<-- [start:from-numpy]
    host = np.arange(32.0, dtype=np.float32).reshape(8, 4)
    from_host = jax.device_put(host, by_rows)
    print("a jax.Array:  ", isinstance(from_host, jax.Array))
    print("same sharding:", from_host.sharding == x_rows.sharding)
    print("same values:  ", np.array_equal(from_host, x_rows))
    # --8<-- [end:from-numpy]
    return from_host


def inspect_sharding(x_rows: jax.Array) -> None:
    # --8<-- [start:inspect]
    print("spec: ", x_rows.sharding.spec)
    print("mesh: ", x_rows.sharding.mesh)
    print("shape:", x_rows.shape)
    # --8<-- [end:inspect]


def uneven_split(mesh_8: Mesh) -> None:
    # --8<-- [start:uneven]
    six_rows = jnp.arange(12.0).reshape(6, 2)
    try:
        jax.device_put(six_rows, NamedSharding(mesh_8, P("x")))
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:uneven]


def main() -> None:
    mesh_8, _, _ = build_meshes()
    x = unplaced_array()
    by_rows, x_rows = put_on_mesh(x, mesh_8)
    put_numpy(by_rows, x_rows)
    inspect_sharding(x_rows)
    uneven_split(mesh_8)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
