"""The mistake the simulation avoids: building the model inside the loop.

Run `python -m snippets.training.simulated_data_parallel.model_in_loop` to print what the page shows.
"""

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx


def model_per_shard(x: jax.Array, expected: jax.Array) -> jax.Array:
    # --8<-- [start:model-per-shard]
    rngs = nnx.Rngs(0)
    chunk = x.shape[0] // 8
    outs, kernels = [], []
    for i in range(8):
        model_i = nnx.Linear(4, 3, rngs=rngs)  # (1)!
        kernels.append(model_i.kernel[...])
        x_shard = jax.lax.dynamic_slice_in_dim(x, i * chunk, chunk, axis=0)
        outs.append(model_i(x_shard))
    wrong = jnp.concatenate(outs, axis=0).reshape(-1)

    wanted = expected.reshape(8, -1)  # (2)!
    print("shard  kernel[0]              same as shard 0  right outputs")
    shards = zip(kernels, wrong.reshape(8, -1), wanted, strict=True)
    for i, (kernel, rows, wanted_rows) in enumerate(shards):
        first_row = " ".join(f"{v:+.3f}" for v in kernel[0])
        same = np.array_equal(kernel, kernels[0])
        right = np.allclose(rows, wanted_rows, atol=1e-6)
        print(f"{i:<7}{first_row:<23}{same!s:<17}{right}")
    print("output matches model(x):", np.allclose(wrong, expected, atol=1e-6))
    # --8<-- [end:model-per-shard]
    return wrong


def main() -> None:
    from snippets.training.simulated_data_parallel import simulate

    x, _, expected = simulate.run_simulation()
    model_per_shard(x, expected)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
