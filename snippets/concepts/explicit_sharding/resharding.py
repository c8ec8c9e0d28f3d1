"""jax.reshard: change an array's sharding on Explicit axes, outside and inside jit.

Run `python -m snippets.concepts.explicit_sharding.resharding` to print what the page shows.
"""

# --8<-- [start:imports]
import jax
from jax import P
from jax.sharding import NamedSharding

# --8<-- [end:imports]
from snippets.concepts.explicit_sharding.propagation_rules import show_types
from snippets.concepts.explicit_sharding.sharding_in_types import arange_on

Mesh = jax.sharding.Mesh  # for the type hints; the page's code does not use it


def outside_jit(x: jax.Array, mesh: Mesh) -> jax.Array:
    # --8<-- [start:reshard-eager]
    gathered = jax.reshard(x, NamedSharding(mesh, P("x", None)))
    for a in (x, gathered):
        print(jax.typeof(a), "each device holds", a.sharding.shard_shape(a.shape))
    # --8<-- [end:reshard-eager]
    return gathered


def disagreeing_operands(x: jax.Array, mesh: Mesh) -> jax.Array:
    # --8<-- [start:disagree]
    swapped = arange_on(mesh, (8, 4), P("y", "x"))
    print("x:", jax.typeof(x), " swapped:", jax.typeof(swapped))
    try:
        x + swapped
    except Exception as err:  # ShardingTypeError, not exported by jax
        print(f"{type(err).__name__}: {err}")
    # --8<-- [end:disagree]
    return swapped


def reshard_inside_jit(x: jax.Array, swapped: jax.Array) -> jax.Array:
    # --8<-- [start:reshard-jit]
    def add_in_x_layout(a, b):
        return a + jax.reshard(b, jax.typeof(a).sharding)  # (1)!

    total = show_types(add_in_x_layout, x, swapped)
    # --8<-- [end:reshard-jit]
    return total


def main() -> None:
    from snippets.concepts.explicit_sharding import sharding_in_types

    mesh = sharding_in_types.build_mesh()
    x, _ = sharding_in_types.types_outside_jit(mesh)
    outside_jit(x, mesh)
    swapped = disagreeing_operands(x, mesh)
    reshard_inside_jit(x, swapped)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
