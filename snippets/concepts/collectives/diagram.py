"""The meshes, the data and the helper that every example on the collectives page uses.

`per_device` runs a function on every device's block and returns what each device held
before and after, one row per device. The site's build draws the two as a table under each
example (`docs_build.render.per_device_table`).
Run `python -m snippets.concepts.collectives.diagram` to print what the page shows.
"""

# --8<-- [start:imports]
import jax
import jax.numpy as jnp
from jax import P
from jax.sharding import AxisType, Mesh, NamedSharding

# --8<-- [end:imports]


def build_meshes() -> tuple[Mesh, Mesh]:
    # --8<-- [start:meshes]
    mesh = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Explicit,))
    mesh_2x4 = jax.make_mesh(
        (2, 4), ("x", "y"), axis_types=(AxisType.Explicit, AxisType.Explicit)
    )
    # --8<-- [end:meshes]
    return mesh, mesh_2x4


# --8<-- [start:per-device]
def per_device(f, x, mesh):
    """Per device: its block of `x` (before) and what `f` makes of it (after)."""
    spec = P(mesh.axis_names)  # (1)!
    if x.ndim == 0 or x.shape[0] % mesh.size:
        raise ValueError(
            f"per_device splits dimension 0 of x over all {mesh.size} devices, "
            f"so it must be a multiple of {mesh.size}; x has shape {x.shape}."
        )
    x = jax.device_put(x, NamedSharding(mesh, spec))

    def body(block):
        return block[None], f(block)[None]  # (2)!

    run = jax.shard_map(body, mesh=mesh, in_specs=spec, out_specs=(spec, spec))
    return jax.jit(run)(x)  # (3)!


# --8<-- [end:per-device]


def build_data(mesh: Mesh) -> tuple[jax.Array, jax.Array]:
    # --8<-- [start:data]
    tens = 10 * jnp.arange(8.0)[:, None]  # row d: for device d
    x = (tens + jnp.arange(2)).ravel()  # device d: 10d and 10d + 1
    x8 = (tens + jnp.arange(8)).ravel()  # device d: 10d to 10d + 7
    print(jax.typeof(x), x)
    print(jax.typeof(x8), x8.reshape(8, 8), sep="\n")
    # --8<-- [end:data]
    return x, x8


def main() -> None:
    mesh, _ = build_meshes()
    build_data(mesh)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
