"""shard_map, then and now: jax.experimental.shard_map, check_rep, pvary and pmap.

Old spellings appear here on purpose, each inside `warnings.catch_warnings` or `try`, so
that the page shows what the pinned JAX says about them.

Run `python -m snippets.guides.migration.shard_map` to print what the page shows.
"""

# --8<-- [start:imports]
import warnings

import jax
import jax.numpy as jnp
import numpy as np
from jax import P
from jax.sharding import AxisType, Mesh, NamedSharding

# --8<-- [end:imports]

Caught = list[warnings.WarningMessage]


def build_data() -> tuple[Mesh, jax.Array, jax.Array]:
    # --8<-- [start:mesh-and-data]
    mesh = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Explicit,))
    values = jnp.arange(8.0)  # on device 0, as older code left it
    x = jax.device_put(values, NamedSharding(mesh, P("x")))  # 1 per device
    print("values:", jax.typeof(values), " x:", jax.typeof(x))
    # --8<-- [end:mesh-and-data]
    return mesh, values, x


def old_shard_map(values: jax.Array) -> tuple[Mesh, jax.Array, Caught]:
    # --8<-- [start:old-shard-map]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # (1)!
        from jax.experimental.shard_map import shard_map

        old_mesh = Mesh(np.array(jax.devices()), ("x",))  # (2)!
        doubled_old = shard_map(
            lambda block: 2 * block,
            old_mesh,
            in_specs=P("x"),
            out_specs=P("x"),
            check_rep=True,
        )(values)
    for warning in caught:
        print(f"{warning.category.__name__}: {warning.message}")
    print(doubled_old)
    # --8<-- [end:old-shard-map]
    return old_mesh, doubled_old, caught


def new_shard_map(mesh: Mesh, x: jax.Array) -> jax.Array:
    # --8<-- [start:new-shard-map]
    double = jax.shard_map(
        lambda block: 2 * block,
        mesh=mesh,  # (1)!
        in_specs=P("x"),
        out_specs=P("x"),
        check_vma=True,  # (2)!
    )
    doubled = double(x)
    print(doubled)
    print(jax.typeof(doubled))
    # --8<-- [end:new-shard-map]
    return doubled


def check_rep(mesh: Mesh, x: jax.Array) -> jax.Array:
    # --8<-- [start:check-rep]
    def double(block):
        return 2 * block

    try:  # the old names, on the new function
        jax.shard_map(
            double, mesh=mesh, in_specs=P("x"), out_specs=P("x"), check_rep=False
        )
    except TypeError as err:
        print(f"TypeError: {err}")
    try:  # the mesh as the second positional argument
        jax.shard_map(double, mesh, in_specs=P("x"), out_specs=P("x"))
    except TypeError as err:
        print(f"TypeError: {err}")

    unchecked = jax.shard_map(
        double, mesh=mesh, in_specs=P("x"), out_specs=P("x"), check_vma=False
    )(x)
    print(unchecked)
    # --8<-- [end:check-rep]
    return unchecked


def pvary_removed() -> None:
    # --8<-- [start:pvary-removed]
    try:
        jax.lax.pvary(jnp.zeros(1), "x")
    except AttributeError as err:
        print(f"AttributeError: {err}")
    # --8<-- [end:pvary-removed]


def pcast_varying(mesh: Mesh, x: jax.Array) -> jax.Array:
    # --8<-- [start:pcast]
    def add_three_times(block):
        start = jnp.zeros(block.shape)  # (1)!
        print("zeros:      ", jax.typeof(start))
        start = jax.lax.pcast(start, "x", to="varying")  # (2)!
        print("after pcast:", jax.typeof(start))
        return jax.lax.fori_loop(0, 3, lambda i, total: total + block, start)

    tripled = jax.shard_map(
        add_three_times, mesh=mesh, in_specs=P("x"), out_specs=P("x")
    )(x)
    print(tripled)
    # --8<-- [end:pcast]
    return tripled


def old_pmap(values: jax.Array) -> tuple[jax.Array, Caught]:
    # --8<-- [start:old-pmap]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        add_all = jax.pmap(lambda v: jax.lax.psum(v, "i"), axis_name="i")
        summed_old = add_all(values)
    print("warnings:", len(caught))
    print(summed_old)
    print(summed_old.sharding)
    # --8<-- [end:old-pmap]
    return summed_old, caught


def new_pmap(mesh: Mesh, x: jax.Array) -> tuple[jax.Array, jax.Array]:
    # --8<-- [start:new-pmap]
    summed = jax.shard_map(
        lambda block: jax.lax.psum(block, "x"),  # (1)!
        mesh=mesh,
        in_specs=P("x"),
        out_specs=P("x"),
    )(x)
    print(summed, jax.typeof(summed))

    total = jax.jit(jnp.sum)(x)  # (2)!
    print(total, jax.typeof(total))
    # --8<-- [end:new-pmap]
    return summed, total


def main() -> None:
    mesh, values, x = build_data()
    old_shard_map(values)
    new_shard_map(mesh, x)
    check_rep(mesh, x)
    pvary_removed()
    pcast_varying(mesh, x)
    old_pmap(values)
    new_pmap(mesh, x)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
