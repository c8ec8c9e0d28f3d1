"""Random numbers that do not depend on the mesh: partitionable threefry, sharded sampling,
typed keys, and one key per example.

Run `python -m snippets.advanced.shapes_and_randomness.randomness` to print what the page shows.
"""

# --8<-- [start:imports]
from functools import partial

# --8<-- [end:imports]
import jax
import jax.numpy as jnp
import numpy as np
from jax import P
from jax.sharding import Mesh, NamedSharding

# On the page, this is defined by an earlier block.
from snippets.hlo import print_collectives


def sample_on_mesh(mesh: Mesh):
    # --8<-- [start:sample]
    print("jax_threefry_partitionable:", jax.config.jax_threefry_partitionable)
    key = jax.random.key(0)

    def noise_rows(key):
        return jax.random.normal(key, (16, 8), out_sharding=P("x"))  # (1)!

    with jax.set_mesh(mesh):
        compiled = jax.jit(noise_rows).lower(key).compile()
        noise = compiled(key)
    print(jax.typeof(noise), " each device:", noise.addressable_shards[0].data.shape)
    print_collectives(compiled)
    # --8<-- [end:sample]
    return key, noise_rows, noise, compiled


def flag_off(mesh: Mesh, key, noise_rows, noise):
    # --8<-- [start:flag-off]
    with jax.set_mesh(mesh), jax.threefry_partitionable(False):
        compiled_off = jax.jit(noise_rows).lower(key).compile()
        noise_off = compiled_off(key)
    print_collectives(compiled_off)
    print("first numbers, flag on: ", np.asarray(noise)[0, :3].round(3))
    print("first numbers, flag off:", np.asarray(noise_off)[0, :3].round(3))
    # --8<-- [end:flag-off]
    return compiled_off, noise_off


def same_on_every_mesh(key):
    # --8<-- [start:every-mesh]
    def sample(key):  # raw random bits, and normal numbers, from one key
        return jax.random.bits(key, (16, 8)), jax.random.normal(key, (16, 8))

    bits, normal = sample(key)  # one device, no mesh
    layouts = {(1,): P("x"), (2,): P("x"), (4,): P(None, "x"), (8,): P("x")}
    layouts[2, 4] = P("x", "y")
    print("mesh              spec          each device  same bits  normal within 1e-6")
    for sizes, spec in layouts.items():
        devices = jax.devices()[: np.prod(sizes)]
        layout_mesh = jax.make_mesh(sizes, ("x", "y")[: len(sizes)], devices=devices)
        b, g = jax.jit(sample, out_shardings=NamedSharding(layout_mesh, spec))(key)
        each = b.addressable_shards[0].data.shape
        same_bits = np.array_equal(b, bits)
        close = np.allclose(g, normal, rtol=0, atol=1e-6)  # (1)!
        row = f"{dict(layout_mesh.shape)!s:<18}{spec!s:<14}{each!s:<13}"
        print(f"{row}{same_bits!s:<11}{close}")
    # --8<-- [end:every-mesh]
    return sample, layouts, bits, normal


def typed_keys():
    # --8<-- [start:keys]
    key = jax.random.key(0)
    print("key:     ", jax.typeof(key))
    init_key, dropout_key = jax.random.split(key)  # (1)!
    print("split:   ", jax.typeof(init_key), jax.typeof(dropout_key))
    print("raw data:", jax.random.key_data(key))
    print("old style:", jax.typeof(jax.random.PRNGKey(0)))  # (2)!
    # --8<-- [end:keys]
    return key, init_key, dropout_key


def keys_per_example(mesh: Mesh, dropout_key):
    # --8<-- [start:sharded-keys]
    example_keys = jax.random.split(dropout_key, 16)  # one key per example
    example_keys = jax.device_put(example_keys, NamedSharding(mesh, P("x")))
    print(jax.typeof(example_keys))
    print("each device:", jax.typeof(example_keys.addressable_shards[0].data))
    # --8<-- [end:sharded-keys]
    return example_keys


# --8<-- [start:dropout]
@partial(jax.jit, static_argnames="rate")
def dropout(keys, x, rate):
    """Zero each entry of `x` with probability `rate`, row i's from keys[i]."""
    if not 0 <= rate < 1:
        raise ValueError(f"rate must be at least 0 and below 1, got {rate}.")
    if keys.shape != x.shape[:1]:
        raise ValueError(
            f"need one key per row: {keys.shape[0]} keys for {x.shape[0]} rows."
        )

    def one_row(key, row):
        keep = jax.random.bernoulli(key, 1 - rate, row.shape)
        return jnp.where(keep, row / (1 - rate), 0.0)

    return jax.vmap(one_row)(keys, x)


# --8<-- [end:dropout]


def dropout_on_mesh(mesh: Mesh, example_keys, dropout_key):
    # --8<-- [start:dropout-run]
    activations = jax.device_put(jnp.ones((16, 4)), NamedSharding(mesh, P("x")))
    print_collectives(dropout.lower(example_keys, activations, rate=0.5).compile())
    dropped = dropout(example_keys, activations, rate=0.5)
    print(jax.typeof(dropped))
    print(np.asarray(dropped)[:4])

    unsharded = dropout(jax.random.split(dropout_key, 16), jnp.ones((16, 4)), rate=0.5)
    print("same as on one device:", np.array_equal(dropped, unsharded))
    # --8<-- [end:dropout-run]
    return activations, dropped, unsharded


def main() -> None:
    from snippets.advanced.shapes_and_randomness.uneven import build_meshes

    mesh, _ = build_meshes()
    key, noise_rows, noise, _ = sample_on_mesh(mesh)
    flag_off(mesh, key, noise_rows, noise)
    same_on_every_mesh(key)
    _, _, dropout_key = typed_keys()
    example_keys = keys_per_example(mesh, dropout_key)
    dropout_on_mesh(mesh, example_keys, dropout_key)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
