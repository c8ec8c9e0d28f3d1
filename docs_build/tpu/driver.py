"""Compile every training step for every target, and write what the programs say.

    python -m docs_build.tpu [--targets cpu v5e:2x4 ...] [--strategies FSDP ...] [--out F]

(`nox -s tpu` runs it, in an environment with libtpu.) For each target (8 CPU devices,
or a TPU topology that libtpu describes without the hardware) and each strategy of
`steps.STRATEGIES`, it lowers and compiles the page's step and stores the mesh, the
collectives (docs_build.hlo: counts, result bytes, wire bytes per device per step), XLA's
memory and cost analyses and the compile time, in docs_build/tpu/results.json.

Nothing runs on a TPU: these are the programs a TPU would run, as the compiler planned
them. The numbers are per device and per step.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import importlib.metadata
import json
import os
import platform
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from docs_build import hlo

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results.json"
CPU_DEVICES = 8
TARGETS = ("cpu", "v5e:2x4", "v5p:2x2x2", "v5e:8x8", "v5e:16x16")
# Several slices joined by the data-center network: `N slices of TOPOLOGY`.
HYBRID_TARGETS = ("2 slices of v5e:2x4", "4 slices of v5e:4x4")
# The three approaches page's layer splits 32 inputs: 8-device targets only.
APPROACH_TARGETS = ("cpu", "v5e:2x4", "v5p:2x2x2")
# The advanced pages' programs: the CPU the pages run on, and the two 8-chip TPU slices.
ADVANCED_TARGETS = APPROACH_TARGETS
HYBRID = re.compile(r"(\d+) slices of (\S+)")

# What libtpu prints when it starts on a machine that is not a TPU VM. Only these lines
# are dropped; anything else it writes reaches stderr.
LIBTPU_NOISE = (
    re.compile(r"TPU_ACCELERATOR_TYPE"),
    re.compile(r"TPU_WORKER_HOSTNAMES"),
    re.compile(r"^WARNING: Logging before InitGoogle\(\) is written to STDERR$"),
)
TRACE = re.compile(r"^=== Source Location Trace: ===\s*$")
TRACE_LINE = re.compile(r"^[\w./-]+\.(cc|h|cpp):\d+\s*$")


def without_libtpu_noise(text: str) -> str:
    """`text` less libtpu's warnings about TPU_* variables (and their source traces)."""
    kept, dropping = [], False
    for line in text.splitlines():
        if any(p.search(line) for p in LIBTPU_NOISE):
            dropping = True  # a trace that follows belongs to this warning
            continue
        if dropping and (TRACE.match(line) or TRACE_LINE.match(line)):
            continue
        dropping = False
        kept.append(line)
    return "\n".join(kept) + ("\n" if kept else "")


@contextlib.contextmanager
def libtpu_quiet() -> Iterator[None]:
    """Capture what native code writes to stderr, and pass on all but libtpu's noise.

    libtpu writes with C++ streams, under Python's sys.stderr, so file descriptor 2 is
    redirected, not the Python object.
    """
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            sys.stderr.write(
                without_libtpu_noise(captured.read().decode(errors="replace"))
            )
            sys.stderr.flush()


def target_devices(target: str) -> list:
    import jax

    if target == "cpu":
        return jax.devices()[:CPU_DEVICES]
    from jax.experimental import topologies

    options = {}
    if match := HYBRID.fullmatch(target):
        options["num_slices"] = int(match.group(1))
        target = match.group(2)
    with libtpu_quiet():
        topology = topologies.get_topology_desc(
            platform="tpu", topology_name=target, **options
        )
    return list(topology.devices)


def networks(records: list[dict]) -> None:
    """Say which network each collective of a multi-slice program crosses.

    libtpu compiles such a program for one slice (`num_partitions` is a slice's chips):
    its collectives stay on the slice's own links ("ici"), and what goes between slices is
    a megascale host transfer, which the HLO reader reads as a collective over the slices
    ("dcn")."""
    for r in records:
        r["network"] = r["network"] or "ici"


MEMORY_FIELDS = {
    "argument_bytes": "argument_size_in_bytes",
    "output_bytes": "output_size_in_bytes",
    "alias_bytes": "alias_size_in_bytes",
    "temp_bytes": "temp_size_in_bytes",
    "peak_bytes": "peak_memory_in_bytes",
    "generated_code_bytes": "generated_code_size_in_bytes",
}
COST_FIELDS = {
    "flops": "flops",
    "bytes_accessed": "bytes accessed",
    "optimal_seconds": "optimal_seconds",
}


def memory(compiled) -> dict[str, int | None]:
    stats = compiled.memory_analysis()
    return {
        key: (int(getattr(stats, name)) if hasattr(stats, name) else None)
        for key, name in MEMORY_FIELDS.items()
    }


def cost(compiled) -> dict[str, float | None]:
    analysis = compiled.cost_analysis()
    if isinstance(analysis, list):  # older jax: one dict per program
        analysis = analysis[0] if analysis else {}
    analysis = analysis or {}
    found = {key: analysis.get(name) for key, name in COST_FIELDS.items()}
    if found["optimal_seconds"] is not None and found["optimal_seconds"] < 0:
        found["optimal_seconds"] = None  # XLA's way of saying it has no estimate
    return found


def describe(
    target: str, strategy: str, devices: list, save_hlo: Path | None = None
) -> dict:
    """Compile one strategy for one target and read the program."""
    from docs_build.tpu import advanced, steps

    if strategy in steps.APPROACHES:
        builders = steps.APPROACHES
    elif strategy in advanced.PROGRAMS:
        builders = advanced.PROGRAMS
    elif HYBRID.fullmatch(target):
        builders = steps.HYBRID_STRATEGIES
    else:
        builders = steps.STRATEGIES
    step = builders[strategy](devices)
    started = time.perf_counter()
    compiled = step.compile()
    seconds = time.perf_counter() - started
    text = compiled.as_text()
    if save_hlo is not None:
        save_hlo.mkdir(parents=True, exist_ok=True)
        name = re.sub(r"\W+", "_", f"{target} {strategy}").strip("_")
        (save_hlo / f"{name}.hlo").write_text(text)
    program = hlo.read(text)
    if missed := program.unaccounted():
        raise RuntimeError(
            f"{target} / {strategy}: the reader neither counted nor folded the "
            f"collective instructions {missed}"
        )
    records = [c.as_record() for c in program.collectives]
    if HYBRID.fullmatch(target):
        networks(records)
    extra = {"extra": step.extra()} if step.extra is not None else {}
    return {
        "target": target,
        "strategy": strategy,
        "source": step.source,
        "mesh": {str(k): int(v) for k, v in step.mesh.shape.items()},
        "compile_seconds": round(seconds, 2),
        "memory": memory(compiled),
        "cost": cost(compiled),
        "collectives": records,
        "summary": hlo.summarize(records),
        # Each asynchronous collective, with the matmuls scheduled while it is in flight.
        "in_flight": [
            {"kind": f.kind, "start": f.start, "matmuls": f.matmuls}
            for f in hlo.in_flight(text)
        ],
        **extra,
    }


ROOT = HERE.parents[1]


# The files whose text decides what results.json holds: the steps, the page code they
# compile, the driver and the HLO reader. A test compares their digests with those the
# results were made from, so an edit without `nox -s tpu` fails instead of going stale.
INPUTS = (
    "docs_build/hlo.py",
    "docs_build/tpu/driver.py",
    "docs_build/tpu/steps.py",
    "snippets/concepts/three_approaches/layer.py",
    "snippets/models.py",
    "snippets/training/choosing/costs.py",
    "snippets/training/choosing/strategies.py",
    "snippets/training/fsdp/step.py",
    "snippets/training/pipeline/gpipe.py",
    "docs_build/tpu/advanced.py",
    # ... and the advanced pages' code it compiles (a test holds this list to it)
    "snippets/advanced/manual_control/collective_matmul.py",
    "snippets/advanced/sequence_parallel/ring.py",
    "snippets/advanced/sequence_parallel/attention.py",
    "snippets/advanced/sequence_parallel/mlp.py",
    "snippets/advanced/expert_parallel/capacity.py",
    "snippets/advanced/expert_parallel/dispatch.py",
    "snippets/advanced/expert_parallel/layer.py",
    "snippets/advanced/inference/layouts.py",
    "snippets/advanced/inference/decode.py",
    "snippets/advanced/profiling/program.py",
    "snippets/advanced/shapes_and_randomness/uneven.py",
    "snippets/advanced/transformer/init.py",
    "snippets/advanced/transformer/memory.py",
    "snippets/advanced/transformer/model.py",
    "snippets/advanced/transformer/step.py",
)


def inputs_digest() -> dict[str, str]:
    """sha256 (first 16 hex digits) of each file in INPUTS, newlines normalised."""
    import hashlib

    return {
        path: hashlib.sha256(
            (ROOT / path).read_text(encoding="utf-8").replace("\r\n", "\n").encode()
        ).hexdigest()[:16]
        for path in INPUTS
    }


def versions() -> dict[str, str | None]:
    found = {"python": platform.python_version()}
    for name in ("jax", "jaxlib", "libtpu", "flax", "optax"):
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    return found


def main(argv: list[str] | None = None) -> int:
    from docs_build.tpu import steps

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--targets", nargs="+", default=list(TARGETS))
    parser.add_argument("--strategies", nargs="+", default=list(steps.STRATEGIES))
    parser.add_argument("--hybrid-targets", nargs="*", default=list(HYBRID_TARGETS))
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--save-hlo", type=Path, help="also write each compiled program's text here"
    )
    args = parser.parse_args(argv)

    from docs_build.devices import use_cpu_devices

    use_cpu_devices(CPU_DEVICES)
    started = time.perf_counter()
    programs, targets = [], {}
    for target in args.targets:
        devices = target_devices(target)
        targets[target] = {
            "devices": len(devices),
            "device_kind": devices[0].device_kind,
            "platform": devices[0].platform,
        }
        programs += _describe_all(target, devices, args.strategies, args.save_hlo)
    hybrid, hybrid_targets = [], {}
    for target in args.hybrid_targets:
        devices = target_devices(target)
        hybrid_targets[target] = {
            "devices": len(devices),
            "slices": len({d.slice_index for d in devices}),
            "device_kind": devices[0].device_kind,
        }
        hybrid += _describe_all(target, devices, steps.HYBRID_STRATEGIES, args.save_hlo)
    approaches = []
    for target in APPROACH_TARGETS:
        devices = target_devices(target)
        approaches += _describe_all(target, devices, steps.APPROACHES, args.save_hlo)
    from docs_build.tpu import advanced

    beyond = []
    for target in ADVANCED_TARGETS:
        devices = target_devices(target)
        beyond += _describe_all(target, devices, advanced.PROGRAMS, args.save_hlo)
    programs_all = programs + hybrid + approaches + beyond
    result = {
        "generated": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d"),
        "seconds": round(time.perf_counter() - started, 1),
        "versions": versions(),
        "inputs": inputs_digest(),
        "model": {
            "name": "snippets.models.MLP",
            "d": steps.D,
            "hidden": steps.HIDDEN,
            "batch": steps.BATCH,
            "dtype": "float32",
            "optimizer": "adam",
            "pipeline_microbatches": steps.MICROBATCHES,
            "two_d_model_axis": steps.MODEL_AXIS,
        },
        "targets": targets,
        "programs": programs,
        # Several slices joined by the data-center network; each collective says which
        # network it crosses ("network": "ici" within a slice, "dcn" between slices).
        "hybrid": {"targets": hybrid_targets, "programs": hybrid},
        # The three approaches page's layer, written three ways ("strategy" names the way).
        "approaches": {"targets": list(APPROACH_TARGETS), "programs": approaches},
        # The "Beyond the basics" pages' programs (docs_build/tpu/advanced.py).
        "advanced": {"targets": list(ADVANCED_TARGETS), "programs": beyond},
    }
    args.out.write_text(dump(result))
    print(f"{len(programs_all)} programs in {result['seconds']} s -> {args.out}")
    return 1 if any("error" in p for p in programs_all) else 0


def _flat(value) -> bool:
    """Scalars, and lists and objects of scalars or of lists of scalars."""
    if isinstance(value, dict):
        return all(_flat(v) and not isinstance(v, dict) for v in value.values())
    if isinstance(value, list):
        return all(not isinstance(v, (dict, list)) for v in value)
    return True


def dump(value, indent: str = "") -> str:
    """The results as JSON, each flat object (a collective's record, a memory report) on
    one line, so that the file stays small and a change to one record is a one-line diff."""
    if _flat(value):
        return json.dumps(value, separators=(", ", ": "))
    inner = indent + " "
    if isinstance(value, dict):
        items = [f"{inner}{json.dumps(k)}: {dump(v, inner)}" for k, v in value.items()]
        body, ends = ",\n".join(items), "{}"
    else:
        body, ends = ",\n".join(inner + dump(v, inner) for v in value), "[]"
    return f"{ends[0]}\n{body}\n{indent}{ends[1]}" + ("" if indent else "\n")


def _describe_all(target, devices, names, save_hlo) -> list[dict]:
    """`describe` each named step for one target; a failure is recorded, not raised (the
    tests fail on it), so one bad step does not hide what the others say."""
    rows = []
    for name in names:
        try:
            row = describe(target, name, devices, save_hlo)
        except Exception as err:
            row = {
                "target": target,
                "strategy": name,
                "error": f"{type(err).__name__}: {err}"[:2000],
            }
        rows.append(row)
        print(_line(row), flush=True)
    return rows


def _line(row: dict) -> str:
    head = f"{row['target']:<10} {row['strategy']:<22}"
    if "error" in row:
        return f"{head} ERROR {row['error'][:200]}"
    kinds = ", ".join(
        f"{s['runs']} {k}"
        + (f" (+{s['unknown_runs']} unknown)" if s["unknown_runs"] else "")
        for k, s in row["summary"].items()
    )
    wire = sum(s["wire_bytes"] for s in row["summary"].values()) / 2**20
    return (
        f"{head} {row['compile_seconds']:>6.2f} s  {wire:>8.2f} MiB  {kinds or 'none'}"
    )
