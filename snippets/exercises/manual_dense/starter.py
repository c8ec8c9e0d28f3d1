"""Exercise manual_dense: a dense layer with shard_map, and its psum.

Check: python -m snippets.exercises.check manual_dense my_solution.py
"""

import jax
from jax.sharding import Mesh


def manual_dense(
    x: jax.Array,
    W: jax.Array,
    b: jax.Array,
    mesh: Mesh,
) -> jax.Array:
    """Return sigmoid(x @ W + b), computed by a jax.shard_map over mesh axis "x".

    x (shape (d_in,)) is laid out as P("x"), W (d_in, d_out) as P("x", None)
    and b (d_out,) as P(): each device holds a slice of x and the matching
    rows of W. Write the body that one device runs, with the communication it
    needs, and return the result whole on every device (out_specs=P()).
    """
    raise NotImplementedError("manual_dense: write it")
