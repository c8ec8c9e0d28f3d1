"""Exercise shard_map_simulate: a data-parallel forward pass, simulated by a loop.

Check: python -m snippets.exercises.check shard_map_simulate my_solution.py
"""

import jax


def shard_map_simulate(
    seed: float, x: jax.Array, num_shards: float, features: float
) -> jax.Array:
    """Apply one nnx.Linear to x shard by shard; return the output, flattened.

    seed, num_shards and features arrive as floats: cast them to int. Build
    nnx.Linear(x.shape[-1], features, rngs=nnx.Rngs(seed)) once. Cut x, of
    shape (N, in_dim) with N a multiple of num_shards, into num_shards equal
    pieces along axis 0 (jax.lax.dynamic_slice_in_dim), apply the layer to
    each, join the outputs along axis 0 and return them flattened: a 1-D
    array of length N * features.
    """
    raise NotImplementedError("shard_map_simulate: write it")
