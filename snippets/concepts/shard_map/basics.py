"""The smallest shard_map: double a vector on a one-device mesh, then on eight; and a bug
that one device hides.

`shard_map_double` is also the solution of the "shard_map Basics" exercise.
Run `python -m snippets.concepts.shard_map.basics` to print what the page shows.
"""

# --8<-- [start:imports]
import jax
import jax.numpy as jnp
from jax import P
from jax.sharding import AxisType, Mesh, NamedSharding

# --8<-- [end:imports]


# --8<-- [start:shard-map-double]
def shard_map_double(x, mesh: Mesh | None = None) -> jax.Array:
    """Double every element of the 1-D array `x` with jax.shard_map.

    `mesh` needs an axis named "data"; by default it is a mesh of one device.
    """
    x = jnp.asarray(x)
    if x.ndim != 1:
        raise ValueError(f"shard_map_double needs a 1-D x, not {x.shape}.")
    if mesh is None:
        first = jax.devices()[:1]  # (1)!
        mesh = jax.make_mesh(
            (1,), ("data",), axis_types=(AxisType.Explicit,), devices=first
        )
    if "data" not in mesh.axis_names:
        raise ValueError(
            f"shard_map_double splits x over a mesh axis named 'data', but "
            f"the mesh's axes are {mesh.axis_names}."
        )
    n = mesh.shape["data"]
    if len(x) % n:
        raise ValueError(
            f"x has {len(x)} elements, which the {n} devices of mesh axis "
            f"'data' cannot share evenly: pad x to a multiple of {n}, or use "
            f"a mesh whose 'data' axis divides {len(x)}."
        )
    double = jax.shard_map(
        lambda y: y * 2.0,
        mesh=mesh,
        in_specs=P("data"),
        out_specs=P("data"),  # (2)!
    )
    return double(jax.device_put(x, NamedSharding(mesh, P("data"))))  # (3)!


# --8<-- [end:shard-map-double]


def one_device() -> jax.Array:
    # --8<-- [start:one-device]
    doubled = shard_map_double(jnp.array([1.0, 2.0, 3.0]))
    print(jax.typeof(doubled), doubled)
    print("devices:", doubled.sharding.mesh.devices)
    # --8<-- [end:one-device]
    return doubled


def eight_devices() -> tuple[Mesh, jax.Array]:
    # --8<-- [start:eight-devices]
    data_mesh = jax.make_mesh((8,), ("data",), axis_types=(AxisType.Explicit,))
    doubled = shard_map_double(jnp.arange(16.0), data_mesh)
    print(jax.typeof(doubled), doubled)
    print("each device holds", doubled.addressable_shards[0].data.shape)
    try:
        shard_map_double(jnp.arange(10.0), data_mesh)
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:eight-devices]
    return data_mesh, doubled


def one_device_hides() -> dict[int, jax.Array]:
    # --8<-- [start:one-device-hides]
    def wrong_mean(block):
        return jax.lax.psum(block.sum(), "data") / block.size  # the block's size!

    x = jnp.arange(16.0)
    means = {}
    for n in (1, 8):
        data_mesh = jax.make_mesh(
            (n,), ("data",), axis_types=(AxisType.Explicit,), devices=jax.devices()[:n]
        )
        mean = jax.shard_map(
            wrong_mean, mesh=data_mesh, in_specs=P("data"), out_specs=P()
        )
        means[n] = mean(jax.device_put(x, NamedSharding(data_mesh, P("data"))))
        print(f"{n} device(s): {means[n]}   x.mean(): {x.mean()}")
    # --8<-- [end:one-device-hides]
    return means


def main() -> None:
    one_device()
    eight_devices()
    one_device_hides()


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
