"""A data-parallel forward pass of one nnx.Linear, simulated by a loop on one device.

`shard_map_simulate` is also the solution of the "NNX shard_map Simulation" exercise: keep
its name and signature. Run `python -m snippets.training.simulated_data_parallel.simulate` to print what the
page shows.
"""

# --8<-- [start:imports]
import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

# --8<-- [end:imports]


# --8<-- [start:simulate]
def shard_map_simulate(seed, x, num_shards, features):
    """One nnx.Linear applied to x shard by shard; the outputs, flattened."""
    seed, num_shards, features = int(seed), int(num_shards), int(features)
    x = jnp.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"x must be 2-D (examples, features), not {x.shape}.")
    if num_shards < 1:
        raise ValueError(f"num_shards must be at least 1; got {num_shards}.")
    if x.shape[0] % num_shards:
        raise ValueError(
            f"{x.shape[0]} rows do not split into {num_shards} equal shards: "
            "make the number of rows of x a multiple of num_shards."
        )
    in_dim = x.shape[-1]
    model = nnx.Linear(in_dim, features, rngs=nnx.Rngs(seed))  # (1)!
    chunk = x.shape[0] // num_shards
    outs = []
    for i in range(num_shards):  # (2)!
        x_shard = jax.lax.dynamic_slice_in_dim(x, i * chunk, chunk, axis=0)
        outs.append(model(x_shard))  # (3)!
    out = jnp.concatenate(outs, axis=0)  # (4)!
    return out.reshape(-1)


# --8<-- [end:simulate]


def run_simulation() -> tuple[jax.Array, nnx.Linear, jax.Array]:
    # --8<-- [start:run]
    x = jax.random.normal(jax.random.key(1), (16, 4))  # 16 examples, 4 features
    print("simulated output:", shard_map_simulate(0, x, 8, 3).shape)
    model = nnx.Linear(4, 3, rngs=nnx.Rngs(0))  # (1)!
    expected = model(x).reshape(-1)
    for num_shards in (1, 2, 4, 8, 16):
        out = shard_map_simulate(0, x, num_shards, 3)
        gap = np.max(np.abs(out - expected))
        rows = 16 // num_shards
        print(
            f"{num_shards:>2} shards of {rows:>2} rows: within {1e-6:g}: {gap <= 1e-6}"
        )
    # --8<-- [end:run]
    return x, model, expected


def bad_inputs(x: jax.Array) -> None:
    # --8<-- [start:bad-inputs]
    for args in [(0, x, 3, 3), (0, x, 0, 3), (0, x[0], 1, 3)]:  # (1)!
        try:
            shard_map_simulate(*args)
        except ValueError as err:
            print(f"ValueError: {err}")
    # --8<-- [end:bad-inputs]


def main() -> None:
    x, _, _ = run_simulation()
    bad_inputs(x)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
