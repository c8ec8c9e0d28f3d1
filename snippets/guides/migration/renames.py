"""Small renames: jax.tree_map, jax.core.get_aval and jax.experimental.pjit.

Run `python -m snippets.guides.migration.renames` to print what the page shows.
"""

# --8<-- [start:imports]
import warnings

import jax
import jax.numpy as jnp

# --8<-- [end:imports]

Caught = list[warnings.WarningMessage]


def old_tree_map() -> dict[str, jax.Array]:
    # --8<-- [start:old-tree-map]
    params = {"w": jnp.ones((2, 2)), "b": jnp.zeros(2)}
    try:
        jax.tree_map(lambda leaf: 2 * leaf, params)
    except AttributeError as err:
        print(f"AttributeError: {err}")
    # --8<-- [end:old-tree-map]
    return params


def new_tree_map(params: dict[str, jax.Array]) -> dict[str, jax.Array]:
    # --8<-- [start:new-tree-map]
    doubled = jax.tree.map(lambda leaf: 2 * leaf, params)
    print({name: leaf.tolist() for name, leaf in doubled.items()})
    # --8<-- [end:new-tree-map]
    return doubled


def old_get_aval(x: jax.Array) -> None:
    # --8<-- [start:old-get-aval]
    try:
        jax.core.get_aval(x)
    except AttributeError as err:
        print(f"AttributeError: {err}")
    # --8<-- [end:old-get-aval]


def new_typeof(x: jax.Array) -> object:
    # --8<-- [start:new-typeof]
    aval = jax.typeof(x)
    print(aval, aval.shape, aval.sharding.spec)
    # --8<-- [end:new-typeof]
    return aval


def old_pjit(values: jax.Array) -> tuple[jax.Array, Caught]:
    # --8<-- [start:old-pjit]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from jax.experimental.pjit import pjit

        plus_one_old = pjit(lambda v: v + 1)(values)
    for warning in caught:
        print(f"{warning.category.__name__}: {warning.message}")
    print(plus_one_old)
    # --8<-- [end:old-pjit]
    return plus_one_old, caught


def new_jit(values: jax.Array) -> jax.Array:
    # --8<-- [start:new-jit]
    plus_one = jax.jit(lambda v: v + 1)(values)
    print(plus_one)
    # --8<-- [end:new-jit]
    return plus_one


def main() -> None:
    from snippets.guides.migration.shard_map import build_data

    _, values, x = build_data()
    params = old_tree_map()
    new_tree_map(params)
    old_get_aval(x)
    new_typeof(x)
    old_pjit(values)
    new_jit(values)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
