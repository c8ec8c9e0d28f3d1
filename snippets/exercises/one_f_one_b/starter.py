"""Exercise one_f_one_b: which stage runs which forward or backward pass, step by step.

Check: python -m snippets.exercises.check one_f_one_b my_solution.py
"""


def one_f_one_b(num_stages: int, num_microbatches: int) -> dict:
    """Return the 1F1B training schedule as a dict {(step, stage): (op, microbatch)}.

    op is "F" (forward) or "B" (backward); a slot where a stage idles has no key.
    Stage s runs, in this order: min(num_stages - 1 - s, num_microbatches)
    forwards, then one forward and one backward in turn, then the backwards left.
    Each job runs at the first step at which its input exists: a forward needs
    the previous stage's forward of that microbatch at an earlier step; a
    backward needs the next stage's backward, or on the last stage its own
    forward, at an earlier step. Raise ValueError unless both arguments are
    whole numbers >= 1.
    """
    raise NotImplementedError("one_f_one_b: write it")
