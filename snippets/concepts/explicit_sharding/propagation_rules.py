"""How shardings propagate on Explicit axes: element-wise (split with split, split with whole),
broadcasting, reductions.

Run `python -m snippets.concepts.explicit_sharding.propagation_rules` to print what the page shows.
"""

# --8<-- [start:imports]
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax import P

# --8<-- [end:imports]
from snippets.concepts.explicit_sharding.sharding_in_types import arange_on
from snippets.hlo import print_collectives  # the page includes it from snippets/hlo.py

Mesh = jax.sharding.Mesh  # for the type hints; the page's code does not use it


# --8<-- [start:show-types]
def show_types(f: Callable, *args) -> jax.Array:
    """Run f under jit; print the types in and out, and the collectives."""
    if not args:
        raise ValueError("show_types(f, *args) needs arguments for f.")
    jitted = jax.jit(f)
    out = jitted(*args)
    types = ", ".join(str(jax.typeof(a)) for a in args)
    print(f"{types} -> {jax.typeof(out)}")
    print_collectives(jitted.lower(*args).compile())
    return out


# --8<-- [end:show-types]


def elementwise(x: jax.Array) -> jax.Array:
    # --8<-- [start:elementwise]
    y = show_types(lambda a: 2 * jnp.exp(a) + a, x)
    # --8<-- [end:elementwise]
    return y


def split_and_whole(mesh: Mesh, x: jax.Array) -> tuple[jax.Array, jax.Array]:
    # --8<-- [start:split-and-whole]
    whole = arange_on(mesh, (8, 4), P())  # the same shape, whole on every device
    y = show_types(jnp.add, x, whole)
    # --8<-- [end:split-and-whole]
    return whole, y


def broadcasting(mesh: Mesh) -> tuple[jax.Array, jax.Array, jax.Array]:
    # --8<-- [start:broadcasting]
    column = arange_on(mesh, (4, 1), P("x", None))
    row = arange_on(mesh, (1, 8), P(None, "y"))
    table = show_types(jnp.add, column, row)
    # --8<-- [end:broadcasting]
    return column, row, table


def reductions(x: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    # --8<-- [start:reductions]
    column_sums = show_types(lambda a: a.sum(axis=0), x)
    row_sums = show_types(lambda a: a.sum(axis=1), x)
    total = show_types(jnp.sum, x)
    # --8<-- [end:reductions]
    return column_sums, row_sums, total


def main() -> None:
    from snippets.concepts.explicit_sharding import sharding_in_types

    mesh = sharding_in_types.build_mesh()
    x, _ = sharding_in_types.types_outside_jit(mesh)
    elementwise(x)
    split_and_whole(mesh, x)
    broadcasting(mesh)
    reductions(x)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
