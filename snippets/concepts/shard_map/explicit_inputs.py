"""On an Explicit mesh, shard_map wants its inputs already laid out as in_specs says.

Run `python -m snippets.concepts.shard_map.explicit_inputs` to print what the page shows.
"""

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax import P
from jax.sharding import AxisType, Mesh, NamedSharding


def unplaced_input(mesh: Mesh) -> tuple[jax.Array, Callable]:
    # --8<-- [start:unplaced-input]
    plain = jnp.arange(16.0)  # made on device 0, not laid out over the mesh
    double = jax.shard_map(
        lambda b: b * 2, mesh=mesh, in_specs=P("x"), out_specs=P("x")
    )
    try:
        double(plain)
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:unplaced-input]
    return plain, double


def reshard_first(mesh: Mesh, plain: jax.Array, double: Callable) -> list[jax.Array]:
    # --8<-- [start:reshard-first]
    placed = jax.reshard(plain, NamedSharding(mesh, P("x")))  # (1)!
    doubled = double(placed)
    print(jax.typeof(placed), doubled)

    inferred = jax.shard_map(lambda b: b * 2, mesh=mesh, out_specs=P("x"))  # (2)!
    from_placed, from_plain = inferred(placed), inferred(plain)
    print("placed:", from_placed.shape, " plain:", from_plain.shape)
    # --8<-- [end:reshard-first]
    return [placed, doubled, from_placed, from_plain]


def auto_mesh(plain: jax.Array) -> tuple[Mesh, jax.Array]:
    # --8<-- [start:auto-mesh]
    auto = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Auto,))
    double_auto = jax.shard_map(
        lambda b: b * 2, mesh=auto, in_specs=P("x"), out_specs=P("x")
    )
    doubled = double_auto(plain)  # (1)!
    print(jax.typeof(doubled), doubled.sharding.spec)
    print(doubled)
    # --8<-- [end:auto-mesh]
    return auto, doubled


def main() -> None:
    mesh = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Explicit,))
    plain, double = unplaced_input(mesh)
    reshard_first(mesh, plain, double)
    auto_mesh(plain)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
