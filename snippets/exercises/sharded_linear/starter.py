"""Exercise sharded_linear: an nnx.Linear whose parameters are laid out by their annotations.

Check: python -m snippets.exercises.check sharded_linear my_solution.py
"""

import jax
from flax import nnx


def sharded_linear(
    d_in: int, d_out: int, mesh: jax.sharding.Mesh, seed: int
) -> nnx.Linear:
    """Return nnx.Linear(d_in, d_out) with its kernel split by columns over
    mesh axis "model" (P(None, "model")) and its bias over "model" (P("model")).

    Annotate the parameters (nnx.with_partitioning) so that Flax creates them
    sharded, rather than moving them after the fact. Use rngs=nnx.Rngs(seed) and
    the layer's default initializers (lecun_normal for the kernel, zeros for the
    bias), so that the values equal those of nnx.Linear(d_in, d_out,
    rngs=nnx.Rngs(seed)).
    """
    raise NotImplementedError("sharded_linear: write it")
