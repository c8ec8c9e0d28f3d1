"""Compile every program the pages cost for every target of a family, and write what they say.

    python -m docs_build.compiled cpu tpu gpu [--targets h100:1x8 ...] [--strategies FSDP ...]

`nox -s tpu` runs the cpu and tpu families (in an environment with libtpu), `nox -s gpu`
the gpu family (in one with jax-cuda12-plugin). For each target (docs_build/compiled/
targets.py: 8 CPU devices, a TPU topology that libtpu describes without the hardware, or
NVIDIA GPU nodes described by a card's spec) and each program (the training strategies of
`steps.STRATEGIES`, the hybrid ones over several slices or nodes, the three approaches
page's layer and the advanced pages' programs), it lowers and compiles the page's code and
stores the mesh, the collectives (docs_build.hlo: counts, result bytes, wire bytes per
device per step, and which links each crosses), XLA's memory and cost analyses and the
compile time, in docs_build/compiled/results/<family>.json: one format for every family.

Nothing runs on a TPU or a GPU: these are the programs one would run, as the compiler
planned them. The numbers are per device and per step. A program that fails to compile is
recorded with its error (the tests fail on it), never left out.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from docs_build import hlo
from docs_build.compiled import targets as tg
from docs_build.compiled.records import (  # noqa: F401  (the grids' and tests' names)
    COST_FIELDS,
    MEMORY_FIELDS,
    PACKAGES,
    cost,
    dump,
    memory,
    pins,
    require,
    versions,
)

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
CPU_DEVICES = tg.CPU_DEVICES


def results_path(family: str) -> Path:
    return RESULTS / f"{family}.json"


def schedule(
    text: str, records: list[dict], computation: str | None = None
) -> list[list]:
    """The entry computation (or `computation`) in the order the program runs it, from
    its first collective to its last: each collective (`all-reduce-start`, `-done`, or a sync one) as [opcode,
    name, result shapes], and each run of matmuls between them as ["matmul", count, None].
    What sits between a start and its done runs while the data travels (the
    latency-hiding scheduler put it there).

    TPU's own forms count too. A chain of asynchronous collective fusions (the collective
    printed again in each fusion, `async_collective_fusion_config`) is a start row at its
    first fusion, named as the collective's record so that its shapes are found, and a
    done row at its last; the fusions between them are work that runs beside it, a matmul
    when they multiply. A reduce-scatter fusion (`kind=kCustom` around an all-reduce and a
    dynamic-slice) is one synchronous "reduce-scatter" row. A matmul fused into a chain's
    first or last fusion or into a reduce-scatter is not counted as compute between."""
    module = hlo.parse(text)
    shapes = {r["name"]: r["shapes"] for r in records}
    entry = list(module.computations[computation or module.entry].instructions.values())
    chains = _fusion_chains(module, entry, set(shapes))
    rows: list[list] = []
    for inst in entry:
        base = inst.opcode.removesuffix("-start").removesuffix("-done")
        chain = chains.get(inst.name)
        if base in hlo.KINDS:
            rows.append([inst.opcode, inst.name, shapes.get(inst.name)])
        elif chain is not None and inst.name in (chain.fusions[0], chain.fusions[-1]):
            if len(chain.fusions) == 1:  # started and awaited in one fusion: it waits
                rows.append([chain.kind, chain.name, shapes.get(chain.name)])
            elif inst.name == chain.fusions[0]:
                rows.append([f"{chain.kind}-start", chain.name, shapes.get(chain.name)])
            else:
                rows.append([f"{chain.kind}-done", inst.name, None])
        elif chain is None and hlo._is_reduce_scatter_fusion(module, inst):
            rows.append(["reduce-scatter", inst.name, shapes.get(inst.name)])
        elif hlo._multiplies(module, inst, set()):
            if rows and rows[-1][0] == "matmul":
                rows[-1][1] += 1
            else:
                rows.append(["matmul", 1, None])
    while rows and rows[0][0] == "matmul":
        rows.pop(0)
    while rows and rows[-1][0] == "matmul":
        rows.pop()
    return rows


def loop_schedules(text: str, records: list[dict]) -> list[dict]:
    """Each `while` of the entry computation whose body holds a collective, in program
    order: its name, its trip count (None if the text does not say) and its body's
    `schedule`. XLA's own collective matmul (windowed einsum) puts its collectives and
    matmuls in such a loop, where the entry's schedule does not see them."""
    module = hlo.parse(text)
    loops = []
    for inst in module.computations[module.entry].instructions.values():
        if inst.opcode != "while":
            continue
        body = inst.called("body")[0]
        rows = schedule(text, records, body)
        if rows:
            loops.append(
                {
                    "while": inst.name,
                    "trip_count": hlo.trip_count(module, inst),
                    "schedule": rows,
                }
            )
    return loops


@dataclass
class _Chain:
    """One TPU asynchronous collective: the entry fusions that carry it, in program order."""

    kind: str
    name: str  # its record's name (hlo.read names a chain by its first piece)
    fusions: list[str]  # entry fusions, in program order
    pieces: list[str]  # the collective instructions (or reduce-scatter fusions) in them


def _fusion_chains(
    module: hlo.Module, entry: list[hlo.Instruction], recorded: set[str]
) -> dict[str, _Chain]:
    """Each entry fusion that is a piece of an asynchronous collective fusion chain -> its
    chain. The chain's key is the reader's (`hlo._chain_key`: channel and chain id); its
    name is whichever of its pieces the records name, else the first."""
    found: dict[tuple, _Chain] = {}
    of: dict[str, _Chain] = {}
    for inst in entry:
        if inst.opcode != "fusion":
            continue
        if hlo._is_reduce_scatter_fusion(module, inst):
            inner = hlo._inner_all_reduce(module, inst)
            pieces = [("reduce-scatter", inst.name, hlo._chain_key(inner))]
        else:
            pieces = [
                (hlo._KIND_OF[i.opcode], i.name, hlo._chain_key(i))
                for i in _fused(module, inst)
                if i.opcode in hlo._KIND_OF
            ]
        for kind, name, key in pieces:
            if key is None:
                continue
            chain = found.setdefault((kind, *key), _Chain(kind, "", [], []))
            chain.pieces.append(name)
            if inst.name not in chain.fusions:
                chain.fusions.append(inst.name)
            of[inst.name] = chain
    for chain in found.values():
        chain.name = next((p for p in chain.pieces if p in recorded), chain.pieces[0])
    return of


def _fused(module: hlo.Module, inst: hlo.Instruction) -> list[hlo.Instruction]:
    """The instructions of the computations a fusion calls, nested fusions included."""
    out, todo, seen = [], list(inst.called("calls")), set()
    while todo:
        name = todo.pop(0)
        if name in seen or name not in module.computations:
            continue
        seen.add(name)
        for i in module.computations[name].instructions.values():
            out.append(i)
            todo.extend(i.called("calls"))
    return out


def describe(
    target: str,
    strategy: str,
    devices: list,
    save_hlo: Path | None = None,
    builders: dict | None = None,
) -> dict:
    """Compile one program for one target and read it."""
    from docs_build.compiled import advanced, steps

    if builders is None:
        if strategy in steps.APPROACHES:
            builders = steps.APPROACHES
        elif strategy in advanced.PROGRAMS:
            builders = advanced.PROGRAMS
        elif tg.MULTI.fullmatch(target):
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
    tg.networks(target, records, [c.groups for c in program.collectives], step.mesh)
    extra = {"extra": step.extra()} if step.extra is not None else {}
    # Only for a program that asks: every other record keeps the fields it had.
    if step.loops:
        extra["loops"] = loop_schedules(text, records)
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
        # The entry computation's collectives and matmuls, in the order they run.
        "schedule": schedule(text, records),
        # Each asynchronous collective, with the matmuls scheduled while it is in flight.
        "in_flight": [
            {"kind": f.kind, "start": f.start, "matmuls": f.matmuls}
            for f in hlo.in_flight(text)
        ],
        **extra,
    }


ROOT = HERE.parents[1]


# The files whose text decides what a results file holds: the steps, the page code they
# compile, the driver, the targets and the HLO reader (and, for GPUs, the cards' specs).
# A test compares their digests with those the results were made from, so an edit without
# `nox -s tpu` / `nox -s gpu` fails instead of going stale.
INPUTS = (
    "docs_build/hlo.py",
    "docs_build/compiled/driver.py",
    "docs_build/compiled/targets.py",
    "docs_build/compiled/records.py",
    "docs_build/compiled/steps.py",
    "snippets/concepts/three_approaches/layer.py",
    "snippets/models.py",
    "snippets/training/choosing/costs.py",
    "snippets/training/choosing/strategies.py",
    "snippets/training/fsdp/step.py",
    "snippets/training/pipeline/gpipe.py",
    "docs_build/compiled/advanced.py",
    # ... and the advanced pages' code it compiles (a test holds this list to it)
    "snippets/advanced/manual_control/collective_matmul.py",
    "snippets/advanced/overlap/xla_matmul.py",
    "snippets/advanced/sequence_parallel/ring.py",
    "snippets/advanced/sequence_parallel/attention.py",
    "snippets/advanced/sequence_parallel/mlp.py",
    "snippets/advanced/sequence_parallel/ulysses.py",
    "snippets/advanced/expert_parallel/balance.py",
    "snippets/advanced/expert_parallel/capacity.py",
    "snippets/advanced/expert_parallel/dispatch.py",
    "snippets/advanced/expert_parallel/dropless.py",
    "snippets/advanced/expert_parallel/hybrid.py",
    "snippets/advanced/expert_parallel/layer.py",
    "snippets/advanced/inference/layouts.py",
    "snippets/advanced/inference/decode.py",
    "snippets/advanced/inference/grouped.py",
    "snippets/advanced/inference/sequence.py",
    "snippets/advanced/profiling/program.py",
    "snippets/advanced/shapes_and_randomness/uneven.py",
    "snippets/advanced/transformer/init.py",
    "snippets/advanced/transformer/memory.py",
    "snippets/advanced/transformer/model.py",
    "snippets/advanced/transformer/step.py",
    "snippets/guides/out_of_memory/step.py",
    "snippets/training/pipeline_training/schedule.py",
    "snippets/training/pipeline_training/step.py",
    "snippets/training/fsdp/memory.py",
    "snippets/training/fsdp/zero.py",
)


def inputs(family: str) -> tuple[str, ...]:
    """INPUTS, and for GPUs the spec file of each card the family compiles for."""
    if family != "gpu":
        return INPUTS
    cards = sorted({tg.CARDS[tg.card(t)] for t in _family_targets(tg.FAMILIES["gpu"])})
    return INPUTS + tuple(f"docs_build/compiled/specs/{c}.txtpb" for c in cards)


def inputs_digest(family: str = "cpu") -> dict[str, str]:
    """sha256 (first 16 hex digits) of each input file, newlines normalised."""
    import hashlib

    return {
        path: hashlib.sha256(
            (ROOT / path).read_text(encoding="utf-8").replace("\r\n", "\n").encode()
        ).hexdigest()[:16]
        for path in inputs(family)
    }


def _family_targets(spec: tg.Family) -> list[str]:
    return list(
        dict.fromkeys(spec.targets + spec.multi + spec.approaches + spec.advanced)
    )


def compile_family(
    family: str,
    only_targets: list[str] | None = None,
    only_strategies: list[str] | None = None,
    save_hlo: Path | None = None,
) -> dict:
    """Every program of a family, as its results file holds them."""
    from docs_build.compiled import advanced, steps

    spec = tg.FAMILIES[family]
    started = time.perf_counter()
    found: dict[str, list] = {}

    def devices(target: str) -> list | Exception:
        if target not in found:
            try:
                found[target] = tg.devices(target)
            except Exception as err:  # recorded in every program of the target
                found[target] = err
        return found[target]

    def wanted(names) -> list[str]:
        return [t for t in names if only_targets is None or t in only_targets]

    def pick(builders: dict) -> dict:
        if only_strategies is None:
            return builders
        return {k: v for k, v in builders.items() if k in only_strategies}

    groups = {}
    for key, names, builders in (
        ("programs", spec.targets, steps.STRATEGIES),
        ("hybrid", spec.multi, steps.HYBRID_STRATEGIES),
        ("approaches", spec.approaches, steps.APPROACHES),
        ("advanced", spec.advanced, advanced.PROGRAMS),
        ("options", spec.options, steps.OPTION_PROGRAMS),
    ):
        rows = []
        for target in wanted(names):
            rows += _describe_all(target, devices(target), pick(builders), save_hlo)
        groups[key] = (wanted(names), rows)
    described = {
        t: {"error": f"{type(d).__name__}: {d}"}
        if isinstance(d, Exception)
        else tg.describe(t, d)
        for t, d in found.items()
    }
    targets, programs = groups["programs"]
    hybrid_targets, hybrid = groups["hybrid"]
    return {
        "family": family,
        "generated": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d"),
        "seconds": round(time.perf_counter() - started, 1),
        "versions": versions(family),
        "inputs": inputs_digest(family),
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
        "targets": {t: described[t] for t in targets},
        "programs": programs,
        # Several slices or nodes; each collective says which links it crosses ("network":
        # "ici" / "nvlink" within a slice or node, "dcn" / "ib" between them).
        "hybrid": {
            "targets": {t: described[t] for t in hybrid_targets},
            "programs": hybrid,
        },
        # The three approaches page's layer, written three ways ("strategy" names the way).
        "approaches": {
            "targets": groups["approaches"][0],
            "programs": groups["approaches"][1],
        },
        # The "Beyond the basics" pages' programs (docs_build/compiled/advanced.py).
        "advanced": {
            "targets": groups["advanced"][0],
            "programs": groups["advanced"][1],
        },
        # The training steps under this backend's XLA options (steps.GPU_OPTIONS).
        "options": {
            "targets": groups["options"][0],
            "programs": groups["options"][1],
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("families", nargs="+", choices=list(tg.FAMILIES))
    parser.add_argument("--targets", nargs="+", help="only these targets")
    parser.add_argument("--strategies", nargs="+", help="only these programs")
    parser.add_argument(
        "--out-dir", type=Path, default=RESULTS, help="where <family>.json goes"
    )
    parser.add_argument(
        "--save-hlo", type=Path, help="also write each compiled program's text here"
    )
    args = parser.parse_args(argv)
    # Compile only: TPU and GPU topologies are described under the CPU platform, and the
    # CUDA plugin must not look for a GPU when JAX starts (FACTS: cuInit fails).
    os.environ["JAX_PLATFORMS"] = "cpu"

    from docs_build.devices import use_cpu_devices

    use_cpu_devices(CPU_DEVICES)
    failed = False
    for family in args.families:
        require(family)
        result = compile_family(family, args.targets, args.strategies, args.save_hlo)
        rows = [
            p
            for key in ("hybrid", "approaches", "advanced", "options")
            for p in result[key]["programs"]
        ] + result["programs"]
        out = args.out_dir / f"{family}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(dump(result))
        print(f"{family}: {len(rows)} programs in {result['seconds']} s -> {out}")
        failed = failed or any("error" in p for p in rows)
    return 1 if failed else 0


def _describe_all(target, devices, builders: dict, save_hlo) -> list[dict]:
    """`describe` each step of `builders` for one target; a failure is recorded, not
    raised (the tests fail on it), so one bad step does not hide what the others say.
    `devices` is the exception the target's devices raised, if they could not be made."""
    rows = []
    for name in builders:
        try:
            if isinstance(devices, Exception):
                raise devices
            row = describe(target, name, devices, save_hlo, builders)
        except Exception as err:
            message = f"{type(err).__name__}: {err}"[:2000]
            row = {"target": target, "strategy": name}
            refused = refused_for_memory(name, message) or unimplemented(
                name, target, message
            )
            row["refused" if refused else "error"] = message
        rows.append(row)
        print(_line(row), flush=True)
    return rows


def refused_for_memory(name: str, message: str) -> bool:
    """Whether a failed compile is a program the page expects may not fit, refused by the
    compiler for lack of memory (libtpu does so at compile time): a result, not an error."""
    from docs_build.compiled.advanced import MAY_NOT_FIT

    return name in MAY_NOT_FIT and "RESOURCE_EXHAUSTED" in message


def unimplemented(name: str, target: str, message: str) -> bool:
    """Whether a failed compile is a program the page shows a backend has no code for
    (`advanced.UNIMPLEMENTED_ON`), refused with that backend's UNIMPLEMENTED: a result."""
    from docs_build.compiled.advanced import UNIMPLEMENTED_ON

    return target in UNIMPLEMENTED_ON.get(name, ()) and "UNIMPLEMENTED:" in message


def _line(row: dict) -> str:
    head = f"{row['target']:<10} {row['strategy']:<22}"
    if "error" in row:
        return f"{head} ERROR {row['error'][:200]}"
    if "refused" in row:
        return f"{head} REFUSED {row['refused'][:200]}"
    kinds = ", ".join(
        f"{s['runs']} {k}"
        + (f" (+{s['unknown_runs']} unknown)" if s["unknown_runs"] else "")
        for k, s in row["summary"].items()
    )
    wire = sum(s["wire_bytes"] for s in row["summary"].values()) / 2**20
    return (
        f"{head} {row['compile_seconds']:>6.2f} s  {wire:>8.2f} MiB  {kinds or 'none'}"
    )
