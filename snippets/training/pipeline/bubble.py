"""The bubble: steps in which a stage has no microbatch, counted from the run, vs the formula.

Run `python -m snippets.training.pipeline.bubble` to print what the page shows.
"""

# --8<-- [start:imports]
from fractions import Fraction

# --8<-- [end:imports]
import jax
import numpy as np
from jax import P
from jax.sharding import NamedSharding

# On the page, these are defined by earlier blocks.
from snippets.training.pipeline.gpipe import gpipe, split_microbatches
from snippets.training.pipeline.stages import place_stages


# --8<-- [start:bubble-fraction]
def bubble_fraction(ran: jax.Array) -> Fraction:
    """The share of (stage, step) slots in which a stage had no microbatch."""
    ran = np.asarray(ran)  # (stages, steps): a microbatch number, or -1
    return Fraction(int((ran < 0).sum()), ran.size)


# --8<-- [end:bubble-fraction]


def first_bubble(ran: jax.Array) -> Fraction:
    # --8<-- [start:first-bubble]
    idle = bubble_fraction(ran)
    print(f"idle: {idle} of all slots = {float(idle):.0%}")
    # --8<-- [end:first-bubble]
    return idle


def bubble_table(stages: list, x: jax.Array) -> dict[tuple[int, int], Fraction]:
    # --8<-- [start:bubble-table]
    found = {}
    print("stages  microbatches  measured  (S-1)/(M+S-1)")
    for num_stages, num_microbatches in [(8, 1), (8, 8), (8, 64), (4, 8)]:
        mesh, graphdef, params = place_stages(stages[:num_stages])
        xs = split_microbatches(x, num_microbatches)
        xs = jax.device_put(xs, NamedSharding(mesh, P()))
        _, ran = gpipe(graphdef, mesh, num_microbatches)(params, xs)
        measured = bubble_fraction(ran)
        formula = Fraction(num_stages - 1, num_microbatches + num_stages - 1)
        found[num_stages, num_microbatches] = measured
        print(
            f"{num_stages:>6}  {num_microbatches:>12}  {measured!s:>8}  "
            f"{formula!s:>13}  {float(measured):4.0%}"
        )
    # --8<-- [end:bubble-table]
    return found


def bad_microbatches(x: jax.Array) -> None:
    # --8<-- [start:bad-microbatches]
    try:
        split_microbatches(x, 5)
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:bad-microbatches]


def main() -> None:
    from snippets.training.pipeline.gpipe import run_pipeline
    from snippets.training.pipeline.stages import build_model

    stages, x, expected = build_model()
    *_, ran = run_pipeline(stages, x, expected)
    first_bubble(ran)
    bubble_table(stages, x)
    bad_microbatches(x)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
