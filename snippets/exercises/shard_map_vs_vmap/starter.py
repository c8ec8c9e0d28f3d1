"""Exercise shard_map_vs_vmap: per-row sums of squares, by vmap and by shard_map.

Check: python -m snippets.exercises.check shard_map_vs_vmap my_solution.py
"""

import jax


def shard_map_vs_vmap(x: jax.Array) -> jax.Array:
    """Return the sum of squares of each row of x, computed twice, shape (2, B).

    x has shape (B, D), for any B: split the rows over as many devices as
    divide B (all of them when they do). Compute the per-row sums of
    squares once with jax.vmap over the rows, and once with jax.shard_map
    (rows split over a mesh axis, a vmap inside the body). Stack the two
    results into one array of shape (2, B), one row per method.
    """
    raise NotImplementedError("shard_map_vs_vmap: write it")
