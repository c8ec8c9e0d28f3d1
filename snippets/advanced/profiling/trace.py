"""Capture a profiler trace of a jitted step on 8 devices, and read what each device ran.

`jax.profiler.trace` writes the trace twice: `<host>.xplane.pb` for XProf and TensorBoard, and
`<host>.trace.json.gz`, its events in the Chrome trace event format, which the page reads
with `json`. Run `python -m snippets.advanced.profiling.trace` to print what the page
shows for the forward pass.
"""

# --8<-- [start:imports]
import gzip
import json
import statistics
import tempfile
import timeit
from pathlib import Path
from typing import NamedTuple

# --8<-- [end:imports]
import jax  # the page imports it in program.py's imports section

from snippets.advanced.profiling.program import predict
from snippets.hlo import COLLECTIVES


# --8<-- [start:capture]
def capture(step, args, log_dir, name="step", steps=3):
    """Run `step(*args)` `steps` times under the profiler, marking each."""
    if steps < 1:
        raise ValueError(f"steps={steps}: trace at least one step.")
    jax.block_until_ready(step(*args))  # compile first, outside the trace
    with jax.profiler.trace(log_dir):
        for number in range(steps):
            with jax.profiler.StepTraceAnnotation(name, step_num=number):
                jax.block_until_ready(step(*args))


# --8<-- [end:capture]


# --8<-- [start:median-time]
def median_us(step, args, runs=50):
    """The median time of `runs` calls of `step(*args)`, in µs."""
    if runs < 1:
        raise ValueError(f"runs={runs}: time at least one call.")
    jax.block_until_ready(step(*args))  # compile and warm up, untimed
    times = timeit.repeat(
        lambda: jax.block_until_ready(step(*args)), number=1, repeat=runs
    )
    return statistics.median(times) * 1e6


# --8<-- [end:median-time]


# --8<-- [start:read-trace]
def trace_events(log_dir) -> list[dict]:
    """The events of the one trace under `log_dir`, from the JSON file JAX wrote."""
    files = sorted(Path(log_dir).glob("plugins/profile/*/*.trace.json.gz"))
    if len(files) != 1:
        raise ValueError(
            f"{log_dir} holds {len(files)} traces: give each capture a new directory."
        )
    with gzip.open(files[0], "rt", encoding="utf-8") as f:
        return json.load(f)["traceEvents"]


class Span(NamedTuple):
    device: int
    op: str  # the HLO instruction's name, as in the compiled program's text
    start: float  # µs after the step's first op began, on any device
    duration: float  # µs
    kind: str  # "compute", "collective", or "waiting" (inside a collective)


def is_collective(op: str) -> bool:
    """XLA names an instruction after its opcode: all-reduce.3 is an all-reduce."""
    kind = op.split(".")[0].removesuffix("-start").removesuffix("-done")
    return kind in COLLECTIVES


def step_spans(events, name, step) -> list[Span]:
    """What each device ran during the step marked `name` number `step`."""
    marks = [
        e
        for e in events
        if e.get("name") == name and e.get("args", {}).get("step_num") == str(step)
    ]
    if len(marks) != 1:
        found = sorted(
            e["args"]["step_num"]
            for e in events
            if e.get("name") == name and "step_num" in e.get("args", {})
        )
        raise ValueError(f"No step {step} named {name!r} in the trace; found {found}.")
    begin, end = marks[0]["ts"], marks[0]["ts"] + marks[0]["dur"]
    inside = [
        e
        for e in events
        if e.get("ph") == "X" and begin <= e["ts"] and e["ts"] + e["dur"] <= end
    ]
    ops = [e for e in inside if "hlo_op" in e.get("args", {})]  # (1)!
    if not ops:
        raise ValueError(f"Step {step} of {name!r} ran no device ops in the trace.")
    first = min(e["ts"] for e in ops)
    spans = []
    for e in ops:
        device, op = int(e["args"]["device_ordinal"]), e["args"]["hlo_op"]
        kind = "collective" if is_collective(op) else "compute"
        spans.append(Span(device, op, e["ts"] - first, e["dur"], kind))
        if kind == "collective":  # (2)!
            spans += [
                Span(device, op, w["ts"] - first, w["dur"], "waiting")
                for w in inside
                if w["name"] == "Rendezvous"
                and w["tid"] == e["tid"]
                and e["ts"] <= w["ts"] <= e["ts"] + e["dur"]
            ]
    return sorted(spans, key=lambda s: (s.device, s.start, s.kind == "waiting"))


# --8<-- [end:read-trace]


# --8<-- [start:print-ops]
def print_ops(spans) -> None:
    """The ops of one step in the order they ran, with their median times."""
    devices = sorted({s.device for s in spans})
    ran = {
        d: [s.op for s in spans if s.device == d and s.kind != "waiting"]
        for d in devices
    }
    print(f"devices in the trace: {devices}")
    print(
        "every device ran the same ops:",
        all(ran[d] == ran[devices[0]] for d in devices),
    )
    print(f"{'op':<28}{'kind':<12}median over devices")
    for op in ran[devices[0]]:
        mine = [s for s in spans if s.op == op]
        time = statistics.median(s.duration for s in mine if s.kind != "waiting")
        line = f"{op:<28}{mine[0].kind:<12}{time:.1f} µs"
        if waits := [s.duration for s in mine if s.kind == "waiting"]:
            line += f", of which waiting {statistics.median(waits):.1f} µs"
        print(line)


# --8<-- [end:print-ops]


def trace_forward(x, w1, w2):
    # --8<-- [start:trace-forward]
    log_dir = tempfile.mkdtemp(prefix="predict-")
    capture(predict, (x, w1, w2), log_dir, name="predict")

    events = trace_events(log_dir)
    marks = [e for e in events if e.get("name") == "predict"]
    print("steps marked:", [mark["args"]["step_num"] for mark in marks])
    spans = step_spans(events, "predict", step=2)
    print_ops(spans)
    # --8<-- [end:trace-forward]
    return log_dir, events, spans


def trace_fixed(x, w1, w2):
    # --8<-- [start:trace-fixed]
    log_dir = tempfile.mkdtemp(prefix="predict-fixed-")
    capture(predict, (x, w1, w2), log_dir, name="predict")
    fixed_spans = step_spans(trace_events(log_dir), "predict", step=2)
    print_ops(fixed_spans)
    # --8<-- [end:trace-fixed]
    return fixed_spans


def main() -> None:
    from snippets.advanced.profiling import program

    mesh = program.line_mesh()
    trace_forward(*program.split_weights(mesh))


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
