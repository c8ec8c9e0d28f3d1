"""Read the collectives out of a compiled program: the helper the concept pages show.

Pages include the `count-collectives` section and call it on `jax.jit(f).lower(...).compile()`;
tests import it to assert the counts.
"""

# --8<-- [start:count-collectives]
import re

COLLECTIVES = (
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "all-to-all",
    "collective-permute",
)


def count_collectives(compiled) -> dict[str, int]:
    """How many of each collective the compiled program's text contains, per device.

    A count of the text: a collective inside a loop body (a `scan`, a `fori_loop`) is counted
    once, however many times the loop runs.
    """
    hlo = compiled.as_text()  # the optimized HLO, after sharding propagation
    # Asynchronous collectives appear as `all-reduce-start(`; count those once.
    return {
        op: n
        for op in COLLECTIVES
        if (n := len(re.findall(rf"\s{op}(?:-start)?\(", hlo)))
    }


def print_collectives(compiled) -> None:
    """Print the collectives of a compiled program as a small table."""
    counts = count_collectives(compiled)
    if not counts:
        print("collectives: none")
    for op, n in counts.items():
        print(f"{op:<20}{n}")


# --8<-- [end:count-collectives]
