"""Exercise ring_all_gather: an all-gather built from ppermute steps.

Check: python -m snippets.exercises.check ring_all_gather my_solution.py
"""

import jax
from jax.sharding import Mesh


def ring_all_gather(x: jax.Array, mesh: Mesh) -> jax.Array:
    """Give every device all of x, passing blocks round a ring with ppermute.

    `mesh` has one axis, "x", of n devices (not always 8). x is a vector split
    over it as P("x"): each device holds len(x) // n numbers. In a jax.shard_map
    body, pass blocks from each device to its neighbour with jax.lax.ppermute
    until every device has collected all n blocks, in order. jax.lax.all_gather
    and psum are ruled out. Return shape (n, len(x)): row d is device d's copy,
    so let each device return its copy as a (1, len(x)) block, with
    out_specs=P("x").
    """
    raise NotImplementedError("ring_all_gather: write it")
