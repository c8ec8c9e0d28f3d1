"""Exercise matmul_rows: settle an ambiguous contraction with out_sharding.

Check: python -m snippets.exercises.check matmul_rows my_solution.py
"""

import jax
from jax.sharding import Mesh


def matmul_rows(x: jax.Array, w: jax.Array, mesh: Mesh) -> jax.Array:
    """Return x @ w with its rows split over mesh axis "x", columns whole.

    `mesh` is an Explicit mesh with axes ("x", "y"). x is laid out as
    P("x", "y") and w as P("y", None), so the dimension the product sums
    over is split over "y", and `x @ w` alone raises ShardingTypeError.
    Say where the result goes: sharding P("x", None) on `mesh`.
    """
    raise NotImplementedError("matmul_rows: write it")
