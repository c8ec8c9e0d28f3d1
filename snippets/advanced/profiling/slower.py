"""Sharded, and slower than one device: a data-parallel training step on this CPU's virtual
devices, timed on one device and on eight, and the eight-device step's trace split into time
in collectives, waiting inside them, and compute, per device.

Run `python -m snippets.advanced.profiling.slower` to print what the page shows.
"""

import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax import P
from jax.sharding import AxisType, Mesh

from snippets.advanced.profiling.program import inputs, predict
from snippets.advanced.profiling.trace import (
    capture,
    median_us,
    step_spans,
    trace_events,
)
from snippets.hlo import print_collectives


# --8<-- [start:train-step]
def loss(params, x):
    w1, w2 = params
    return jnp.mean((predict(x, w1, w2) - x) ** 2)  # learn to give x back


@jax.jit
def train_step(params, x):
    grads = jax.grad(loss)(params, x)
    return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)


# --8<-- [end:train-step]


def one_and_eight(mesh: Mesh):
    # --8<-- [start:one-and-eight]
    x, w1, w2 = inputs(mesh, weight_spec=P())
    on_eight = ((w1, w2), x)  # the batch split 8 ways, the weights whole everywhere
    one_device = jax.make_mesh(
        (1,), ("x",), axis_types=(AxisType.Explicit,), devices=jax.devices()[:1]
    )
    x, w1, w2 = inputs(one_device, weight_spec=P())
    on_one = ((w1, w2), x)  # the same numbers, all of them on device 0
    print_collectives(train_step.lower(*on_eight).compile())

    agree = jax.tree.map(
        lambda a, b: np.allclose(a, b, atol=1e-6),
        train_step(*on_one),
        train_step(*on_eight),
    )
    print("same new weights on one device and on eight:", all(jax.tree.leaves(agree)))
    one = median_us(train_step, on_one)
    eight = median_us(train_step, on_eight)
    print(f"one device:    {one:7.1f} µs per step (median of 50)")
    print(f"eight devices: {eight:7.1f} µs per step (median of 50)")
    # --8<-- [end:one-and-eight]
    return on_one, on_eight, one, eight


# --8<-- [start:shares]
def shares(spans, device):
    """The fractions of one device's step in collectives, waiting inside
    them, and in compute; and the step's length on that device, in µs, from
    the start of its first op to the end of its last."""
    mine = [s for s in spans if s.device == device]
    if not mine:
        devices = sorted({s.device for s in spans})
        raise ValueError(f"device {device} is not in these spans; they have {devices}.")
    ran = [s for s in mine if s.kind != "waiting"]
    length = max(s.start + s.duration for s in ran) - min(s.start for s in ran)
    fractions = {
        kind: sum(s.duration for s in mine if s.kind == kind) / length
        for kind in ("collective", "waiting", "compute")
    }
    return fractions, length


def print_shares(spans) -> None:
    header = ("device", "collectives", "waiting", "compute", "step")
    print("{:<8}{:>12}{:>9}{:>9}{:>13}".format(*header))
    for device in sorted({s.device for s in spans}):
        share, length = shares(spans, device)
        print(
            f"{device:<8}{share['collective']:>12.0%}{share['waiting']:>9.0%}"
            f"{share['compute']:>9.0%}{length:>10.1f} µs"
        )


# --8<-- [end:shares]


def trace_train(on_eight):
    # --8<-- [start:trace-train]
    log_dir = tempfile.mkdtemp(prefix="train-")
    capture(train_step, on_eight, log_dir, name="train")
    train_spans = step_spans(trace_events(log_dir), "train", step=2)
    print_shares(train_spans)
    # --8<-- [end:trace-train]
    return train_spans


def main() -> None:
    from snippets.advanced.profiling.program import line_mesh

    _, on_eight, _, _ = one_and_eight(line_mesh())
    trace_train(on_eight)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
