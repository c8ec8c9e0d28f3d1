"""Exercise moe_dispatch: send tokens to their experts with all_to_all.

Check: python -m snippets.exercises.check moe_dispatch my_solution.py
"""

import jax
from jax.sharding import Mesh


def moe_dispatch(
    tokens: jax.Array, expert_index: jax.Array, capacity: int, mesh: Mesh
) -> jax.Array:
    """Send every token to the device of its expert; return what each expert got.

    `mesh` has one axis, "expert", of n devices (not always 8), and device e holds
    expert e. `tokens` (float32, shape (T, d)) and `expert_index` (int32, shape
    (T,), the expert of each token) are split over it as P("expert"): each device
    holds a group of T // n tokens. In a jax.shard_map body, each device packs its
    tokens into an (n, capacity, d) buffer: row e holds, in order, the first
    `capacity` of its tokens routed to expert e, zeros after them; later tokens
    for e are dropped. One jax.lax.all_to_all sends row e to device e.
    all_gather and psum are ruled out. Return shape (n, n * capacity, d), split
    P("expert"): row e is what expert e received, its slots j * capacity to
    (j + 1) * capacity - 1 the row that device j sent it.
    """
    raise NotImplementedError("moe_dispatch: write it")
