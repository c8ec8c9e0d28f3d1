"""Exercise place_batch: split a batch over the "data" axis, checking it fits.

Check: python -m snippets.exercises.check place_batch my_solution.py
"""

import jax
import numpy as np
from jax.sharding import Mesh


def place_batch(x: np.ndarray, mesh: Mesh) -> jax.Array:
    """Put the batch x on `mesh`, its examples (dimension 0) split over "data".

    `mesh` has an axis "data" and may have others; along those, every device
    gets a copy. If dimension 0 of x is not a multiple of the size n of "data",
    raise ValueError with a message that tells the caller what to change: it
    must contain the words "multiple of n" (with the number, e.g. "multiple of
    8").
    """
    raise NotImplementedError("place_batch: write it")
