"""Exercise process_rows: the rows of a global batch one process must load.

Check: python -m snippets.exercises.check process_rows my_solution.py
"""

from collections.abc import Sequence

import jax
from jax.sharding import NamedSharding


def process_rows(
    sharding: NamedSharding,
    global_shape: tuple[int, ...],
    process_devices: Sequence[jax.Device],
) -> list[int]:
    """Return the rows (indices along dimension 0) of an array of
    `global_shape`, laid out by `sharding`, that the devices in
    `process_devices` hold: the rows that process must load before calling
    jax.make_array_from_process_local_data. Sorted, each row once.
    """
    raise NotImplementedError("process_rows: write it")
