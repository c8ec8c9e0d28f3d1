"""Exercise remat_budget: the remat policy that fits a memory budget at the least recompute.

Check: python -m snippets.exercises.check remat_budget my_solution.py
"""


def remat_budget(measured: dict, budget_bytes: int):
    """Return the key of `measured` to use as Config.remat.

    `measured` maps each policy (False, True, "dots", ...) to a pair
    (temporaries, flops): the compiled train step's temporary bytes per device
    and its floating-point operations under that policy. Of the policies whose
    temporaries are at most budget_bytes, return the one with the fewest flops
    (the least recomputed); on a tie in flops, the one with fewer temporaries.
    If no policy fits, raise ValueError.
    """
    raise NotImplementedError("remat_budget: write it")
