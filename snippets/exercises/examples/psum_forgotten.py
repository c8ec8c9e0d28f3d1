"""A wrong answer to the exercise manual_dense, for the exercises' index page.

The body returns each device's partial result, and check_vma=False silences the
check that would have caught it.
"""

import jax
from jax import P


def manual_dense(x, W, b, mesh):
    def one_device(x, W, b):
        return jax.nn.sigmoid(x @ W + b)

    layer = jax.shard_map(
        one_device,
        mesh=mesh,
        in_specs=(P("x"), P("x", None), P()),
        out_specs=P(),
        check_vma=False,
    )
    return layer(x, W, b)
