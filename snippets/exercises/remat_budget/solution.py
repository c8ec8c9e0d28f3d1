"""Reference solution of the exercise `remat_budget` (activation memory and remat).

Run `python -m snippets.exercises.remat_budget.solution` to see it pick from a table.
"""


# --8<-- [start:solution]
def remat_budget(measured: dict, budget_bytes: int):
    """The policy whose step fits `budget_bytes` of temporaries with the fewest FLOPs."""
    fits = {
        policy: (flops, temp)  # (1)!
        for policy, (temp, flops) in measured.items()
        if temp <= budget_bytes  # (2)!
    }
    if not fits:
        least = min(temp for temp, _ in measured.values())
        raise ValueError(
            f"No policy fits {budget_bytes:,} bytes: the least is {least:,} bytes."
        )
    return min(fits, key=fits.get)


# --8<-- [end:solution]


def main() -> None:
    measured = {  # temporaries, FLOPs: made-up figures
        False: (220_000, 100_000),
        True: (108_000, 120_000),
        "dots_no_batch": (127_000, 107_000),
    }
    for budget in (250_000, 130_000, 110_000):
        print(f"{budget:,} bytes: remat={remat_budget(measured, budget)!r}")


if __name__ == "__main__":
    main()
