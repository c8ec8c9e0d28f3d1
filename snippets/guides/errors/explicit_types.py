"""Errors from operations on Explicit axes: an ambiguous contraction, and two operands
split along different mesh axes.

Run `python -m snippets.guides.errors.explicit_types` to print what the page shows.
"""

# --8<-- [start:imports]
import jax
import jax.numpy as jnp
from jax import P
from jax.sharding import NamedSharding

# --8<-- [end:imports]
# On the page, print_collectives is defined by an earlier block.
from snippets.hlo import print_collectives

Mesh = jax.sharding.Mesh  # for the type hints; the page's code does not use it


def contraction(mesh: Mesh) -> tuple[jax.Array, jax.Array]:
    # --8<-- [start:contraction]
    a = jax.device_put(
        jnp.arange(32.0).reshape(4, 8), NamedSharding(mesh, P(None, "y"))
    )
    b = jax.device_put(jnp.ones((8, 2)), NamedSharding(mesh, P("y", None)))
    print("a:", jax.typeof(a), " b:", jax.typeof(b))
    try:
        a @ b
    except Exception as err:  # (1)!
        print(f"{type(err).__name__}: {err}")
    # --8<-- [end:contraction]
    return a, b


def contraction_fix(mesh: Mesh, a: jax.Array, b: jax.Array) -> tuple:
    # --8<-- [start:contraction-fix]
    def matmul(a, b):
        return jnp.matmul(a, b, out_sharding=P())  # (1)!

    with jax.set_mesh(mesh):
        product = jax.jit(matmul)(a, b)
        compiled = jax.jit(matmul).lower(a, b).compile()
    print(jax.typeof(product))
    print_collectives(compiled)  # (2)!
    # --8<-- [end:contraction-fix]
    return product, compiled


def incompatible(mesh: Mesh) -> tuple[jax.Array, jax.Array]:
    # --8<-- [start:incompatible]
    over_x = jax.device_put(jnp.arange(8.0), NamedSharding(mesh, P("x")))
    over_y = jax.device_put(jnp.arange(8.0), NamedSharding(mesh, P("y")))
    try:
        over_x + over_y
    except Exception as err:
        print(f"{type(err).__name__}: {err}")
    # --8<-- [end:incompatible]
    return over_x, over_y


def incompatible_fix(mesh: Mesh, over_x: jax.Array, over_y: jax.Array) -> jax.Array:
    # --8<-- [start:incompatible-fix]
    moved = jax.reshard(over_y, NamedSharding(mesh, P("x")))
    total = over_x + moved
    print(jax.typeof(total), total)
    # --8<-- [end:incompatible-fix]
    return total


def main() -> None:
    from snippets.guides.errors.device_setup import meshes_that_fit

    mesh, _, _ = meshes_that_fit()
    a, b = contraction(mesh)
    contraction_fix(mesh, a, b)
    over_x, over_y = incompatible(mesh)
    incompatible_fix(mesh, over_x, over_y)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
