"""Placing arrays, then and now: device_put_replicated, device_put_sharded,
PositionalSharding, PmapSharding, specs compared with tuples, and jit(device=).

Run `python -m snippets.guides.migration.placement` to print what the page shows.
"""

# --8<-- [start:imports]
import warnings

import jax
import jax.numpy as jnp
import numpy as np
from jax import P
from jax.sharding import Mesh, NamedSharding

# --8<-- [end:imports]

Caught = list[warnings.WarningMessage]


def old_replicated() -> jax.Array:
    # --8<-- [start:old-replicated]
    params = jnp.array([1.0, 2.0, 3.0])
    try:
        jax.device_put_replicated(params, jax.devices())
    except AttributeError as err:
        print(f"AttributeError: {err}")
    # --8<-- [end:old-replicated]
    return params


def new_replicated(mesh: Mesh, params: jax.Array) -> tuple[jax.Array, jax.Array]:
    # --8<-- [start:new-replicated]
    replicated = jax.device_put(params, NamedSharding(mesh, P()))  # (1)!
    print(jax.typeof(replicated), replicated.sharding.is_fully_replicated)

    copies = jnp.broadcast_to(params, (mesh.size, *params.shape))  # (2)!
    stacked = jax.device_put(copies, NamedSharding(mesh, P("x")))
    print(jax.typeof(stacked))
    for shard in stacked.addressable_shards[:2]:
        print(shard.device, shard.data)
    # --8<-- [end:new-replicated]
    return replicated, stacked


def old_sharded() -> list[np.ndarray]:
    # --8<-- [start:old-sharded]
    pieces = [np.full((2,), i, np.float32) for i in range(8)]  # one per device
    try:
        jax.device_put_sharded(pieces, jax.devices())
    except AttributeError as err:
        print(f"AttributeError: {err}")
    # --8<-- [end:old-sharded]
    return pieces


def new_sharded(mesh: Mesh, pieces: list[np.ndarray]) -> tuple[jax.Array, jax.Array]:
    # --8<-- [start:new-sharded]
    by_rows = NamedSharding(mesh, P("x"))
    stacked = jax.device_put(np.stack(pieces), by_rows)  # (1)!

    on_devices = [  # (2)!
        jax.device_put(piece[np.newaxis], device)
        for piece, device in zip(pieces, mesh.devices.flat, strict=True)
    ]
    assembled = jax.make_array_from_single_device_arrays(
        (8, 2),
        by_rows,
        on_devices,
    )

    print(jax.typeof(stacked), jax.typeof(assembled))
    print("same values:", np.array_equal(stacked, assembled))
    fourth = assembled.addressable_shards[3]
    print(fourth.device, fourth.data)
    # --8<-- [end:new-sharded]
    return stacked, assembled


def removed_sharding_classes() -> None:
    # --8<-- [start:old-sharding-classes]
    try:
        jax.sharding.PositionalSharding(jax.devices()).reshape(8, 1)
    except AttributeError as err:
        print(f"AttributeError: {err}")
    try:
        jax.sharding.PmapSharding.default((8, 2))
    except AttributeError as err:
        print(f"AttributeError: {err}")
    # --8<-- [end:old-sharding-classes]


def named_sharding_instead(mesh: Mesh) -> tuple[jax.Array, jax.Array]:
    # --8<-- [start:new-sharding-classes]
    grid = jnp.arange(16.0).reshape(8, 2)
    rows = jax.device_put(grid, NamedSharding(mesh, P("x", None)))  # (1)!
    everywhere = jax.device_put(grid, NamedSharding(mesh, P()))  # (2)!
    print(jax.typeof(rows), rows.addressable_shards[0].data.shape)
    print(jax.typeof(everywhere), everywhere.addressable_shards[0].data.shape)
    # --8<-- [end:new-sharding-classes]
    return rows, everywhere


def specs_and_tuples() -> dict[str, bool]:
    # --8<-- [start:specs-and-tuples]
    spec = P("x", None)
    checks = {
        'spec == ("x", None)': spec == ("x", None),
        'spec == P("x", None)': spec == P("x", None),
        'tuple(spec) == ("x", None)': tuple(spec) == ("x", None),
    }
    for expression, result in checks.items():
        print(f"{expression:<28} {result}")
    # --8<-- [end:specs-and-tuples]
    return checks


def old_jit_device(values: jax.Array) -> tuple[jax.Array, Caught]:
    # --8<-- [start:old-jit-device]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        on_one_old = jax.jit(lambda v: v + 1, device=jax.devices()[1])(values)
    for warning in caught:
        print(f"{warning.category.__name__}: {warning.message}")
    print(on_one_old, on_one_old.devices())
    # --8<-- [end:old-jit-device]
    return on_one_old, caught


def new_jit_device(values: jax.Array) -> jax.Array:
    # --8<-- [start:new-jit-device]
    on_one = jax.jit(lambda v: v + 1)(jax.device_put(values, jax.devices()[1]))
    print(on_one, on_one.devices())
    # --8<-- [end:new-jit-device]
    return on_one


def main() -> None:
    from snippets.guides.migration.shard_map import build_data

    mesh, values, _ = build_data()
    params = old_replicated()
    new_replicated(mesh, params)
    pieces = old_sharded()
    new_sharded(mesh, pieces)
    removed_sharding_classes()
    named_sharding_instead(mesh)
    specs_and_tuples()
    old_jit_device(values)
    new_jit_device(values)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
