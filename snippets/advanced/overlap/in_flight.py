"""What runs while each asynchronous collective travels, read from a compiled program."""

# --8<-- [start:imports]
import re

import jax
import numpy as np
from jax import P
from jax.sharding import NamedSharding

# --8<-- [end:imports]

# --8<-- [start:in-flight]
# One instruction of a compiled program: `%name = <type> opcode(operands...`
INSTRUCTION = re.compile(r"^\s*(?:ROOT )?%(\S+) = .*?\s([\w-]+)\((.*)$")
COLLECTIVES = (
    "all-gather",
    "all-reduce",
    "reduce-scatter",
    "all-to-all",
    "collective-permute",
)
# Bookkeeping, not work: naming a buffer or a piece of a tuple costs nothing.
FREE = ("parameter", "constant", "bitcast", "get-tuple-element", "tuple")


def in_flight(hlo: str) -> list[tuple[str, list[str]]]:
    """Each collective's `*-start` in the entry computation, with the opcodes the program
    runs before the `*-done` that waits for it (bookkeeping left out). A compiled program lists its instructions in the
    order they run, so these are what the device can do while the data travels."""
    entry = hlo[hlo.index("\nENTRY ") :]
    entry = entry[: entry.index("\n}")]
    order = [m.groups() for m in map(INSTRUCTION.match, entry.splitlines()) if m]
    pairs = []
    for i, (name, opcode, _) in enumerate(order):
        if opcode.removesuffix("-start") not in COLLECTIVES or opcode in COLLECTIVES:
            continue
        done = opcode.removesuffix("-start") + "-done"
        between = []
        for _, later, operands in order[i + 1 :]:
            if later == done and f"%{name}" in re.findall(r"%[\w.-]+", operands):
                break
            if later not in FREE:
                between.append(later)
        else:
            raise ValueError(f"{name} has no {done} in the entry computation")
        pairs.append((name, between))
    return pairs


# --8<-- [end:in-flight]


def gather_then_multiply():
    # --8<-- [start:cpu-program]
    line = jax.make_mesh((8,), ("x",))

    @jax.jit
    def layer(x, w):
        return jax.numpy.tanh(x @ w)  # w's rows are split: the compiler gathers them

    x = jax.device_put(np.ones((64, 256), np.float32), NamedSharding(line, P("x")))
    w = jax.device_put(np.ones((256, 256), np.float32), NamedSharding(line, P("x")))
    hlo = layer.lower(x, w).compile().as_text()
    print(f"start/done pairs on {jax.default_backend()}:", in_flight(hlo))
    print("synchronous all-gathers:", hlo.count(" all-gather("))
    # --8<-- [end:cpu-program]
    return hlo
