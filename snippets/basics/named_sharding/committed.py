"""Committed and uncommitted arrays: what device_put with and without a target gives, and
where jit runs when they meet.

Run `python -m snippets.basics.named_sharding.committed` to print what the page shows.
"""

# --8<-- [start:imports]
import jax
import jax.numpy as jnp

# --8<-- [end:imports]


# --8<-- [start:show-placement]
def show_placement(arrays: dict[str, jax.Array]) -> dict[str, bool]:
    """Print whether each array is committed, and to which devices."""
    committed = {}
    for label, array in arrays.items():
        if not isinstance(array, jax.Array):
            raise TypeError(
                f"{label} is a {type(array).__name__}, not a jax.Array: only arrays "
                "on devices are committed or not (jax.device_put it first)."
            )
        ids = sorted(d.id for d in array.devices())
        committed[label] = array.committed
        print(f"{label:<26} committed={array.committed!s:<6} devices={ids}")
    return committed


# --8<-- [end:show-placement]


def committed_or_not(x: jax.Array, x_rows: jax.Array) -> tuple[jax.Array, dict]:
    # --8<-- [start:committed]
    loose = jax.device_put(x)  # (1)!
    on_3 = jax.device_put(x, jax.devices()[3])
    flags = show_placement(
        {
            "x (from jnp)": x,
            "device_put(x)": loose,
            "device_put(x, device 3)": on_3,
            "device_put(on_3)": jax.device_put(on_3),  # (2)!
            "x_rows": x_rows,
        }
    )
    # --8<-- [end:committed]
    return on_3, flags


def when_they_meet(
    x: jax.Array, on_3: jax.Array, x_rows: jax.Array
) -> tuple[jax.Array, jax.Array]:
    # --8<-- [start:committed-meet]
    add = jax.jit(jnp.add)
    with_on_3 = add(x, on_3)  # (1)!
    with_rows = add(x, x_rows)
    show_placement({"x + on_3": with_on_3, "x + x_rows": with_rows})
    print("x + x_rows is split as", with_rows.sharding.spec)
    # --8<-- [end:committed-meet]
    return with_on_3, with_rows


def main() -> None:
    from snippets.basics.named_sharding import place_arrays

    mesh_8, _, _ = place_arrays.build_meshes()
    x = place_arrays.unplaced_array()
    _, x_rows = place_arrays.put_on_mesh(x, mesh_8)
    on_3, _ = committed_or_not(x, x_rows)
    when_they_meet(x, on_3, x_rows)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
