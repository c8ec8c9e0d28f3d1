"""Exercise per_device_bytes: how much of an array each device holds.

Check: python -m snippets.exercises.check per_device_bytes my_solution.py
"""

from jax import P
from jax.sharding import Mesh


def per_device_bytes(shape: tuple[int, ...], dtype, spec: P, mesh: Mesh) -> int:
    """Return the bytes of the block each device holds of an array of `shape`
    and `dtype` (e.g. jnp.float32), laid out as `spec` on `mesh`.

    Work it out from the spec and the sizes of the mesh axes: each dimension is
    divided by the product of the sizes of the axes its entry names. If a
    dimension does not split evenly, raise ValueError.
    """
    raise NotImplementedError("per_device_bytes: write it")
