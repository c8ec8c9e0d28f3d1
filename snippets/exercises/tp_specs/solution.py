"""Reference solution of the exercise `tp_specs` (practises tensor parallelism).

Run `python -m snippets.exercises.tp_specs.solution` to print the specs.
"""

# --8<-- [start:imports]
from jax import P

# --8<-- [end:imports]


# --8<-- [start:solution]
def tp_specs(axis: str) -> dict[str, P]:
    """Specs for the MLP's parameters: up column-parallel, down row-parallel."""
    return {
        "up.kernel": P(None, axis),  # (1)!
        "up.bias": P(axis),  # (2)!
        "down.kernel": P(axis, None),  # (3)!
        "down.bias": P(),  # (4)!
    }


# --8<-- [end:solution]


def main() -> None:
    for name, spec in tp_specs("model").items():
        print(f"{name:<12} {spec}")


if __name__ == "__main__":
    main()
