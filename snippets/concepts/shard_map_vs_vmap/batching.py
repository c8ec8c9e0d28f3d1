"""vmap batches logically: one program over the whole batch, with no devices in it.

Run `python -m snippets.concepts.shard_map_vs_vmap.batching` to print what the page shows.
"""

# --8<-- [start:imports]
import jax
import jax.numpy as jnp
import numpy as np

# --8<-- [end:imports]


# --8<-- [start:per-row]
def sum_of_squares(row: jax.Array) -> jax.Array:
    """The per-row computation: one row of D numbers in, one number out."""
    return jnp.sum(row**2)


# --8<-- [end:per-row]


def make_batch() -> tuple[jax.Array, np.ndarray]:
    # --8<-- [start:batch]
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.integers(-3, 4, size=(16, 3)), dtype=jnp.float32)  # (B, D)
    expected = np.sum(np.asarray(x) ** 2, axis=1)  # NumPy, one sum per row
    print("x:", jax.typeof(x))
    print("expected:", expected)
    # --8<-- [end:batch]
    return x, expected


def vmap_rows(x: jax.Array, expected: np.ndarray) -> tuple:
    # --8<-- [start:vmap]
    batched = jax.vmap(sum_of_squares)  # (1)!
    vmap_result = batched(x)
    print(vmap_result)
    print("matches NumPy:", np.allclose(vmap_result, expected))
    print("type:", jax.typeof(vmap_result))
    print("lives on:", vmap_result.sharding)
    # --8<-- [end:vmap]
    return batched, vmap_result


def vmap_jaxpr(batched, x: jax.Array) -> None:
    # --8<-- [start:vmap-jaxpr]
    print(jax.make_jaxpr(batched)(x))
    # --8<-- [end:vmap-jaxpr]


def main() -> None:
    x, expected = make_batch()
    batched, _ = vmap_rows(x, expected)
    vmap_jaxpr(batched, x)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
