"""How jax.jit carries shardings from its inputs through a function, on Auto mesh axes.

Run `python -m snippets.concepts.automatic_sharding.propagation` to print what the page shows.
"""

# --8<-- [start:imports]
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import P
from jax.sharding import AxisType, NamedSharding

# --8<-- [end:imports]
from snippets.hlo import print_collectives  # the page includes it from snippets/hlo.py

Mesh = jax.sharding.Mesh  # for the type hints; the page's code does not use it


def build_mesh() -> Mesh:
    # --8<-- [start:auto-mesh]
    auto = AxisType.Auto
    mesh = jax.make_mesh((2, 4), ("x", "y"), axis_types=(auto, auto))
    print(mesh)
    # --8<-- [end:auto-mesh]
    return mesh


# --8<-- [start:show]
def show(f: Callable, *args, **jit_options) -> jax.Array:
    """Compile and run f; print the output's spec and the collectives."""
    if not args:
        raise ValueError("show(f, *args) needs arguments to compile f for.")
    compiled = jax.jit(f, **jit_options).lower(*args).compile()  # (1)!
    out = compiled(*args)  # (2)!
    print("output spec:", out.sharding.spec)
    print_collectives(compiled)
    return out


# --8<-- [end:show]


def place_input(mesh: Mesh) -> jax.Array:
    # --8<-- [start:place-input]
    grid = NamedSharding(mesh, P("x", "y"))
    x = jax.device_put(jnp.arange(32.0).reshape(8, 4), grid)
    print("x:", x.shape, x.sharding.spec)
    print("each device holds", x.addressable_shards[0].data.shape)
    # --8<-- [end:place-input]
    return x


def elementwise(x: jax.Array) -> jax.Array:
    # --8<-- [start:elementwise]
    y = show(lambda a: 2 * jnp.sin(a) + 1, x)
    # --8<-- [end:elementwise]
    return y


def reductions(x: jax.Array) -> tuple[jax.Array, jax.Array]:
    # --8<-- [start:column-sums]
    column_sums = show(lambda a: a.sum(axis=0), x)
    # --8<-- [end:column-sums]
    # --8<-- [start:total]
    total = show(jnp.sum, x)
    print("total:", total, "=", np.arange(32.0).sum())
    # --8<-- [end:total]
    return column_sums, total


def contracting_matmul(x: jax.Array, mesh: Mesh) -> tuple[jax.Array, jax.Array]:
    # --8<-- [start:matmul-contracting]
    w = jax.device_put(
        jnp.arange(32.0).reshape(4, 8), NamedSharding(mesh, P("y", None))
    )
    xw = show(jnp.matmul, x, w)  # (8, 4) @ (4, 8): the 4 is split over "y"
    # --8<-- [end:matmul-contracting]
    return w, xw


def free_matmul(mesh: Mesh) -> tuple[jax.Array, jax.Array, jax.Array]:
    # --8<-- [start:matmul-free]
    rows = jax.device_put(
        jnp.arange(32.0).reshape(8, 4), NamedSharding(mesh, P("x", None))
    )
    cols = jax.device_put(
        jnp.arange(32.0).reshape(4, 8), NamedSharding(mesh, P(None, "y"))
    )
    outer = show(jnp.matmul, rows, cols)
    # --8<-- [end:matmul-free]
    return rows, cols, outer


def main() -> None:
    mesh = build_mesh()
    x = place_input(mesh)
    elementwise(x)
    reductions(x)
    contracting_matmul(x, mesh)
    free_matmul(mesh)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
