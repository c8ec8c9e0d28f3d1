"""Exercise gpipe_schedule: which stage works on which microbatch, step by step.

Check: python -m snippets.exercises.check gpipe_schedule my_solution.py
"""

import numpy as np


def gpipe_schedule(num_stages: int, num_microbatches: int) -> np.ndarray:
    """Return the GPipe forward schedule as an integer array.

    Entry [s, t] is the microbatch that stage s works on at step t, or -1 if
    stage s has nothing to do then. Microbatch m enters stage 0 at step m and
    moves one stage on per step. There are as many steps as it takes the last
    microbatch to leave the last stage. Raise ValueError unless both arguments
    are whole numbers >= 1.
    """
    raise NotImplementedError("gpipe_schedule: write it")
