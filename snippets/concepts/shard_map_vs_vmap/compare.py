"""The exercise: per-row sums of squares by jax.vmap and by jax.shard_map, stacked.

`shard_map_vs_vmap(x)` is importable on its own (an exercise solution elsewhere uses it).
Run `python -m snippets.concepts.shard_map_vs_vmap.compare` to print what the page shows.
"""

# --8<-- [start:imports]
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax import P
from jax.sharding import AxisType, NamedSharding

# --8<-- [end:imports]


# --8<-- [start:shard-map-vs-vmap]
def shard_map_vs_vmap(
    x: jax.Array, devices: Sequence[jax.Device] | None = None
) -> jax.Array:
    """Per-row sum of squares of x, shape (B, D), by vmap and by shard_map.

    Returns jnp.stack([vmap_result, shard_map_result]), shape (2, B). The
    shard_map path splits the rows over a 1-D mesh of `devices` (default: as
    many of jax.devices() as divide B), so any B works on any machine.
    """
    x = jnp.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"x must be 2-D, (B, D), but has shape {x.shape}.")
    given = jax.devices() if devices is None else list(devices)
    if not given:
        raise ValueError("devices is empty: pass at least one jax.Device.")
    rows = x.shape[0]
    fits = max(k for k in range(1, len(given) + 1) if rows % k == 0)  # (1)!
    if devices is None:
        devices = given[:fits]
    elif fits < len(given):
        n = len(given)
        raise ValueError(
            f"x has {rows} rows, which do not split evenly over {n} devices: "
            f"pad x to {rows + -rows % n} rows, or pass "
            f"devices=jax.devices()[:{fits}]."
        )
    n = len(devices)

    def row_sum_of_squares(row):
        return jnp.sum(row**2)

    vmap_result = jax.vmap(row_sum_of_squares)(x)  # (2)!

    mesh = jax.make_mesh(
        (n,), ("rows",), axis_types=(AxisType.Explicit,), devices=devices
    )
    x_rows = jax.device_put(x, NamedSharding(mesh, P("rows")))
    shard_map_result = jax.shard_map(
        jax.vmap(row_sum_of_squares),  # (3)!
        mesh=mesh,
        in_specs=P("rows"),
        out_specs=P("rows"),
    )(x_rows)

    # x may sit on another mesh; stacking needs both results on one.
    vmap_result = jax.device_put(vmap_result, shard_map_result.sharding)
    return jnp.stack([vmap_result, shard_map_result])


# --8<-- [end:shard-map-vs-vmap]


def compare(x: jax.Array, expected: np.ndarray) -> jax.Array:
    # --8<-- [start:compare]
    both = shard_map_vs_vmap(x)
    print(both)
    print("type:", jax.typeof(both))
    print("rows equal:", np.array_equal(both[0], both[1]))
    print("match NumPy:", np.allclose(both, np.stack([expected, expected])))
    print("each device:", both.addressable_shards[0].data.shape)
    # --8<-- [end:compare]
    return both


def indivisible(x: jax.Array) -> jax.Array:
    # --8<-- [start:indivisible]
    x12 = x[:12]  # 12 rows for 8 devices
    try:
        shard_map_vs_vmap(x12, devices=jax.devices())  # all 8, asked for
    except ValueError as err:
        print(f"ValueError: {err}")
    on_six = shard_map_vs_vmap(x12)  # left to choose, it takes the 6 that divide 12
    print(jax.typeof(on_six), "on", len(on_six.devices()), "devices")
    print("each device:", on_six.addressable_shards[0].data.shape)
    # --8<-- [end:indivisible]
    return on_six


def one_device(x: jax.Array, both: jax.Array) -> jax.Array:
    # --8<-- [start:one-device]
    on_one = shard_map_vs_vmap(x, devices=jax.devices()[:1])
    print(jax.typeof(on_one), "on", on_one.devices())
    print("each device:", on_one.addressable_shards[0].data.shape)
    print("same numbers as on 8:", np.array_equal(on_one, both))
    # --8<-- [end:one-device]
    return on_one


def main() -> None:
    from snippets.concepts.shard_map_vs_vmap import batching

    x, expected = batching.make_batch()
    both = compare(x, expected)
    indivisible(x)
    one_device(x, both)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
