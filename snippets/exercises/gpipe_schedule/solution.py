"""Reference solution of the exercise `gpipe_schedule` (pipeline parallelism).

Run `python -m snippets.exercises.gpipe_schedule.solution` to print a schedule.
"""

# --8<-- [start:imports]
import numpy as np

# --8<-- [end:imports]


# --8<-- [start:solution]
def gpipe_schedule(num_stages: int, num_microbatches: int) -> np.ndarray:
    """Which microbatch each stage works on at each step of a GPipe forward pass.

    Shape (num_stages, num_microbatches + num_stages - 1); -1 where a stage idles.
    """
    for name, value in [
        ("num_stages", num_stages),
        ("num_microbatches", num_microbatches),
    ]:
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a whole number >= 1: {value!r}.")
    steps = num_microbatches + num_stages - 1  # (1)!
    stage = np.arange(num_stages)[:, None]
    step = np.arange(steps)[None, :]
    microbatch = step - stage  # (2)!
    busy = (microbatch >= 0) & (microbatch < num_microbatches)
    return np.where(busy, microbatch, -1)


# --8<-- [end:solution]


def main() -> None:
    schedule = gpipe_schedule(4, 4)
    print(schedule)
    print("bubble:", (schedule < 0).mean())


if __name__ == "__main__":
    main()
