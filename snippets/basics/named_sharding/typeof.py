"""The sharding in the type: jax.typeof on Explicit mesh axes, and not on Auto axes.

Run `python -m snippets.basics.named_sharding.typeof` to print what the page shows.
"""

# --8<-- [start:imports]
import jax
from jax import P
from jax.sharding import AxisType, Mesh, NamedSharding

# --8<-- [end:imports]


def explicit_types(x: jax.Array, mesh_8: Mesh, mesh_2x4: Mesh) -> None:
    # --8<-- [start:typeof-explicit]
    print(f"{'mesh':<8}{'spec':<18}{'jax.typeof':<20}shard shape")
    for m, spec in [
        (mesh_8, P("x")),
        (mesh_2x4, P("x")),
        (mesh_2x4, P("x", "y")),
        (mesh_2x4, P("y", "x")),
        (mesh_2x4, P(("x", "y"))),
        (mesh_2x4, P(None, "y")),
        (mesh_2x4, P()),
    ]:
        placed = jax.device_put(x, NamedSharding(m, spec))
        shard = placed.addressable_shards[0].data.shape
        print(f"{m.axis_sizes!s:<8}{spec!s:<18}{jax.typeof(placed)!s:<20}{shard}")
    # --8<-- [end:typeof-explicit]


def auto_type(x: jax.Array) -> jax.Array:
    # --8<-- [start:typeof-auto]
    auto_2x4 = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    x_auto = jax.device_put(x, NamedSharding(auto_2x4, P("x", "y")))
    print("jax.typeof:", jax.typeof(x_auto))
    print("spec:      ", x_auto.sharding.spec)
    print("shard:     ", x_auto.addressable_shards[0].data.shape)
    # --8<-- [end:typeof-auto]
    return x_auto


def main() -> None:
    from snippets.basics.named_sharding import place_arrays

    mesh_8, mesh_2x4, _ = place_arrays.build_meshes()
    x = place_arrays.unplaced_array()
    explicit_types(x, mesh_8, mesh_2x4)
    auto_type(x)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
