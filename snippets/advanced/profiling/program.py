"""The program the profiling page traces: a two-layer forward pass on a batch split 8 ways,
first with its weights split like the batch (an all-gather per weight per call), then whole.

Run `python -m snippets.advanced.profiling.program` to print what the page shows.
"""

import re  # the page imports it in snippets/hlo.py's count-collectives section

# --8<-- [start:imports]
import jax
import jax.numpy as jnp
import numpy as np
from jax import P
from jax.sharding import AxisType, NamedSharding

# --8<-- [end:imports]
from snippets.hlo import COLLECTIVES, print_collectives


def line_mesh():
    # --8<-- [start:mesh]
    mesh = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Explicit,))
    print(mesh)
    # --8<-- [end:mesh]
    return mesh


# --8<-- [start:program]
@jax.jit
def predict(x, w1, w2):
    return jnp.tanh(x @ w1) @ w2


def inputs(mesh, weight_spec, batch=64, d=128, hidden=256):
    """x split by rows over the mesh, and w1 and w2 placed as `weight_spec` says."""
    devices = mesh.devices.size
    if batch % devices:
        raise ValueError(
            f"batch={batch} does not split over {devices} devices: "
            f"make it a multiple of {devices}."
        )
    for name, shape in (("w1", (d, hidden)), ("w2", (hidden, d))):
        for size, axis in zip(shape, weight_spec, strict=False):
            if axis is not None and size % mesh.shape[axis]:
                raise ValueError(
                    f"{name} {shape} cannot be split as {weight_spec}: {size} "
                    f"is not a multiple of {mesh.shape[axis]}. Change d or "
                    "hidden, or the spec."
                )
    k1, k2, k3 = jax.random.split(jax.random.key(0), 3)
    x = jax.random.normal(k1, (batch, d))
    w1 = jax.random.normal(k2, (d, hidden)) / np.sqrt(d)
    w2 = jax.random.normal(k3, (hidden, d)) / np.sqrt(hidden)
    rows = NamedSharding(mesh, P("x", None))
    weights = NamedSharding(mesh, weight_spec)
    return (
        jax.device_put(x, rows),
        jax.device_put(w1, weights),
        jax.device_put(w2, weights),
    )


# --8<-- [end:program]


def split_weights(mesh):
    # --8<-- [start:split-weights]
    x, w1, w2 = inputs(mesh, weight_spec=P("x", None))  # split like the batch
    print(jax.typeof(x), jax.typeof(w1), jax.typeof(w2))
    # --8<-- [end:split-weights]
    return x, w1, w2


# --8<-- [start:print-hlo-collectives]
# name = result-type opcode(operands): a tuple result type is in parentheses
INSTRUCTION = re.compile(r"^\s*(?:ROOT )?%?([\w.-]+) = (\(.*?\)|\S+) ([\w-]+)\((.*?)\)")


def print_hlo_collectives(compiled) -> None:
    """Each collective of a compiled program: name, operands, result type."""
    for line in compiled.as_text().splitlines():
        found = INSTRUCTION.match(line)
        if found and found[3].removesuffix("-start") in COLLECTIVES:
            name, result, op, operands = found.groups()
            result = re.sub(r"\{[\d,]*\}", "", result)  # drop the memory layouts
            print(f"{name} = {op}({operands.replace('%', '')}) -> {result}")


# --8<-- [end:print-hlo-collectives]


def find_in_hlo(x, w1, w2):
    # --8<-- [start:find-in-hlo]
    compiled = predict.lower(x, w1, w2).compile()
    print_collectives(compiled)
    print_hlo_collectives(compiled)
    # --8<-- [end:find-in-hlo]
    return compiled


def fix(mesh, x, w1, w2):
    # --8<-- [start:fix]
    slow = predict(x, w1, w2)
    x, w1, w2 = inputs(mesh, weight_spec=P())  # each device holds both weights whole
    print(jax.typeof(w1), jax.typeof(w2))
    fixed = predict.lower(x, w1, w2).compile()
    print_collectives(fixed)

    fast = fixed(x, w1, w2)
    expected = np.tanh(np.asarray(x) @ np.asarray(w1)) @ np.asarray(w2)
    print("the same numbers as before:", bool(jnp.all(fast == slow)))
    gap = np.max(np.abs(fast - expected))
    print(f"within {1e-5:g} of NumPy: {gap <= 1e-5}")
    # --8<-- [end:fix]
    return (x, w1, w2), fixed, slow, fast, expected


def main() -> None:
    mesh = line_mesh()
    args = split_weights(mesh)
    find_in_hlo(*args)
    fix(mesh, *args)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
