"""Exercise ring_attention: causal attention with keys and values passed round a ring.

Check: python -m snippets.exercises.check ring_attention my_solution.py
"""

import jax
from jax.sharding import Mesh


def ring_attention(q: jax.Array, k: jax.Array, v: jax.Array, mesh: Mesh) -> jax.Array:
    """Causal attention, softmax(q kᵀ / √d) v with query i seeing keys 0 ... i.

    `mesh` has one axis, "seq", of n devices (not always 8). q, k and v have shape
    (positions, d) and are split over it as P("seq"): device j holds the j-th block
    of positions of each. In a jax.shard_map body, keep each device's queries and
    pass the blocks of k and v round the ring with jax.lax.ppermute, folding each
    block into an online softmax (running max, denominator and numerator), so that
    no device ever holds all of k or v. all_gather, psum, psum_scatter and
    all_to_all are ruled out. Return the (positions, d) result split as P("seq").
    """
    raise NotImplementedError("ring_attention: write it")
