"""Compile the transformer page's train step for a grid of sizes x meshes x targets.

    python -m docs_build.planner_grid [--targets cpu v5e:2x4 ...] [--configs small ...]

(`nox -s planner` runs it, in the environment with libtpu and the CUDA plugin.) Each entry is the program the strategy
planner prints for that size and mesh (docs_build.planner_program: the page's own step,
`init.sharded_init` and `step.make_train_step`, on a (data, fsdp, tensor) mesh of 8
devices, or of the 16 to 256 devices of a `LARGE` target), executed up to its compile, lowered from shapes and compiled for the target,
as `docs_build/compiled/advanced.py` does for the page's one mesh. Stored per entry: the
memory analysis, and the collectives as the HLO reader reads them (with their wire bytes
per device per step, ring model). tests/docs_build/test_planner.py holds the strategy
planner's formulas (docs_build/planner.py) to these programs.

Nothing runs on a TPU or a GPU: these are the programs one would run, as the compiler planned
them.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

from docs_build import hlo
from docs_build.compiled import records
from docs_build.compiled import targets as tg

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "planner_grid.json"
TARGETS = ("cpu", "v5e:2x4", "v5p:2x2x2", "h100:1x8")
DEVICES = 8
# (data, fsdp, tensor): every layout the page's mesh expresses on 8 devices that the
# planner names (data, FSDP, tensor, the two 2-D ones), and the page's own (2, 2, 2).
MESHES = ((8, 1, 1), (1, 8, 1), (1, 1, 8), (2, 1, 4), (4, 1, 2), (2, 2, 2))
# Beyond 8 devices: a TPU v5p slice of 64 chips and a v5e pod of 256, and 2 and 8 nodes of
# 8 H100s, each with one layout of every kind the planner ranks (data, FSDP, tensor, data x
# FSDP, FSDP x tensor, data x tensor, data x FSDP x tensor), for the one size of
# LARGE_CONFIGS. Each mesh keeps the groups of the gathers (fsdp), the gradient sums
# (data x fsdp) and the activation sums (tensor) of different sizes, as planner.plan_of
# needs to tell them apart (so no (8, 1, 8): its gradient sums and tensor's sums both
# span 8 devices). One TPU generation per count, and one size, keep the whole grid's CPU
# time down (each entry records its own). The CPU target stays at 8 devices: the pages'
# virtual CPU devices.
MESHES_OF = {
    16: (
        (16, 1, 1),
        (1, 16, 1),
        (1, 1, 16),
        (4, 4, 1),
        (1, 2, 8),
        (2, 1, 8),
        (2, 4, 2),
    ),
    64: (
        (64, 1, 1),
        (1, 64, 1),
        (1, 1, 64),
        (8, 8, 1),
        (1, 16, 4),
        (16, 1, 4),
        (2, 8, 4),
    ),
    256: (
        (256, 1, 1),
        (1, 256, 1),
        (1, 1, 256),
        (16, 16, 1),
        (1, 32, 8),
        (32, 1, 8),
        (8, 4, 8),
    ),
}
LARGE = {"h100:2x8": 16, "v5p:4x4x4": 64, "h100:8x8": 64, "v5e:16x16": 256}
# A v5p slice's chips form a cube, 4 x 4 x 4 for 64 of them, and `jax.make_mesh` gives each
# mesh axis whole sides of it (4, 16 or 64 chips): it refuses an axis of 8. So that slice's
# data x fsdp and 3-D meshes are (4, 16, 1) and (4, 4, 4) (the only 3-D one; its gathers and
# activation sums both span 4 chips, which plan_of tells apart by kind). The refused meshes
# are tried too, and their errors kept in the grid: what the planner's program would meet.
MESHES_OF_TARGET = {
    "v5p:4x4x4": (
        (64, 1, 1),
        (1, 64, 1),
        (1, 1, 64),
        (4, 16, 1),
        (1, 16, 4),
        (16, 1, 4),
        (4, 4, 4),
    ),
}
REFUSED = {"v5p:4x4x4": ((8, 8, 1), (2, 8, 4))}
# name -> (the page's Config fields, global batch). Heads and every split width are
# multiples of 8, so every mesh above divides every size. Each entry records its compile's
# wall and CPU seconds: their sums are what `nox -s planner`'s 15-minute budget is held to.
CONFIGS = {
    "tiny": (
        dict(vocab=2048, d_model=256, heads=8, mlp=1024, layers=2, seq=128),
        8,
    ),
    "wide, no remat": (
        dict(
            vocab=16384, d_model=768, heads=16, mlp=3072, layers=4, seq=256, remat=False
        ),
        32,
    ),
    # a Llama-style block: grouped-query attention (16 query heads share 8 key/value heads),
    # a gated (SwiGLU) MLP, and the output head tied to the embedding
    "gqa, gated, tied": (
        dict(
            vocab=8192,
            d_model=512,
            heads=16,
            kv_heads=8,
            mlp=1408,
            layers=4,
            seq=256,
            gated=True,
            tied=True,
        ),
        16,
    ),
    # the transformer page's TPU size (docs_build/compiled/advanced.py), about 168 M parameters
    "page": (
        dict(vocab=32768, d_model=1024, heads=8, mlp=4096, layers=8, seq=1024),
        16,
    ),
}
# The size compiled beyond 8 devices: its heads (one key/value head each), its width, MLP
# width, vocabulary and batch all divide 256, so every mesh of MESHES_OF splits it; a gated
# (SwiGLU) MLP of 2.75 x the width, as Llama's.
LARGE_CONFIGS = {
    "many heads, gated": (
        dict(
            vocab=8192,
            d_model=2048,
            heads=256,
            mlp=5632,
            layers=2,
            seq=128,
            gated=True,
        ),
        256,
    ),
}
# The strategy planner page's examples at full size: Llama-3-8B (its published config, as
# snippets/advanced/transformer/presets.py gives it) with a batch of 64 sequences, on the
# mesh the page ranks first for 64 H100s and for a v5p slice of 64 chips, each compiled
# for that target only (tests/docs_build/test_planner_page.py holds the fields, the batch
# and the meshes to the page's answer).
EXAMPLE_CONFIGS = {
    "Llama-3-8B": (
        dict(
            vocab=128256,
            d_model=4096,
            heads=32,
            kv_heads=8,
            mlp=14336,
            layers=32,
            seq=8192,
            gated=True,
        ),
        64,
    ),
}
EXAMPLE_MESHES = {
    ("h100:8x8", "Llama-3-8B"): ((1, 32, 2),),
    ("v5p:4x4x4", "Llama-3-8B"): ((1, 64, 1),),
}
# Sizes left out of a target to keep `nox -s planner` within its 15 minutes on a 2-core
# machine (the TPU compiles are most of its CPU seconds): the TPU 8-chip targets keep the
# page's size (PLAN_CONFIG, whose programs the offered plans are read from; v5e also the
# Llama-style size, the page's unchecked TPU example) and drop "tiny", "wide, no remat" and
# (v5p) the Llama-style size; the H100 node drops "tiny", which the temporaries check
# leaves out (transformer_cost.EXCLUDED). The CPU keeps every size.
SKIPPED = {
    ("v5e:2x4", "tiny"),
    ("v5e:2x4", "wide, no remat"),
    ("v5p:2x2x2", "tiny"),
    ("v5p:2x2x2", "wide, no remat"),
    ("v5p:2x2x2", "gqa, gated, tied"),
    ("h100:1x8", "tiny"),
}
ALL_CONFIGS = CONFIGS | LARGE_CONFIGS | EXAMPLE_CONFIGS
# The files whose text decides what the grid holds; a test compares their digests.
INPUTS = (
    "docs_build/hlo.py",
    "docs_build/planner_grid.py",
    "docs_build/planner_program.py",
    "docs_build/compiled/records.py",
    "docs_build/compiled/targets.py",
    "snippets/advanced/transformer/init.py",
    "snippets/advanced/transformer/model.py",
    "snippets/advanced/transformer/step.py",
)
# What a stored collective keeps of the reader's record.
KEPT = ("kind", "shapes", "dtype", "group_size", "runs", "wire_bytes")


def inputs_digest() -> dict[str, str]:
    import hashlib

    return {
        path: hashlib.sha256(
            (records.ROOT / path)
            .read_text(encoding="utf-8")
            .replace("\r\n", "\n")
            .encode()
        ).hexdigest()[:16]
        for path in INPUTS
    }


def devices_of(target: str) -> int:
    """How many devices `target`'s entries use: 8, or its LARGE count."""
    return LARGE.get(target, DEVICES)


def meshes_of(
    target: str, config: str | None = None
) -> tuple[tuple[int, int, int], ...]:
    """The meshes `target` compiles `config` on (an example's own, or the target's)."""
    if (target, config) in EXAMPLE_MESHES:
        return EXAMPLE_MESHES[target, config]
    if devices_of(target) == DEVICES:
        return MESHES
    return MESHES_OF_TARGET.get(target, MESHES_OF[devices_of(target)])


def configs_of(target: str) -> dict:
    """The sizes `target` compiles: the 8-device sizes (less SKIPPED) or the larger
    ones, and an example's where it has meshes on `target`."""
    sizes = CONFIGS if devices_of(target) == DEVICES else LARGE_CONFIGS
    examples = {
        c: v for c, v in EXAMPLE_CONFIGS.items() if (target, c) in EXAMPLE_MESHES
    }
    return {c: v for c, v in (sizes | examples).items() if (target, c) not in SKIPPED}


def plan_target(target: str) -> str:
    """The 8-device target of the same chip (v5e:2x4 for v5e:16x16), whose programs the
    planner page reads its offered plan from."""
    return next(t for t in TARGETS if t.split(":")[0] == target.split(":")[0])


def compile_step(config: str, shape: tuple[int, int, int], devices):
    """The planner's printed program for `config` on a (data, fsdp, tensor) = `shape`
    mesh (docs_build.planner_program.program, up to its compile), run in a namespace of
    the transformer page's names whose `jax.devices()` are the target's `devices`: the
    compiled step it leaves in `compiled`."""
    from docs_build import planner as pl
    from docs_build import planner_program

    _, batch = ALL_CONFIGS[config]
    model = pl.Model.from_config(_config(config), batch)
    layout = pl.Layout(pl.name_of(*shape), *shape)
    text = planner_program.program(model, layout, run=False)
    names = planner_program.namespace(devices)
    exec(compile(text, f"<planner program: {config} on {shape}>", "exec"), names)
    return names["compiled"]


def describe(target: str, config: str, shape: tuple[int, int, int], devices) -> dict:
    started, cpu = time.perf_counter(), time.process_time()
    compiled = compile_step(config, shape, devices)
    seconds = time.perf_counter() - started
    # the CPU time of every thread of this process: what a quiet machine's wall time is
    # near, whatever else shares the machine
    cpu = time.process_time() - cpu
    program = hlo.read(compiled.as_text())
    if missed := program.unaccounted():
        raise RuntimeError(
            f"{target} / {config} / {shape}: the reader missed the collectives {missed}"
        )
    found = [c.as_record() for c in program.collectives]
    return {
        "target": target,
        "config": config,
        "mesh": list(shape),
        "devices": math.prod(shape),
        "compile_seconds": round(seconds, 2),
        "compile_cpu_seconds": round(cpu, 2),
        "memory": records.memory(compiled),
        "summary": hlo.summarize(found),
        "collectives": [{k: r[k] for k in KEPT} for r in found],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--targets", nargs="+", default=[*TARGETS, *LARGE])
    parser.add_argument("--configs", nargs="+", default=[*ALL_CONFIGS])
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--jobs",
        type=int,
        choices=(1, 2),
        default=2,
        help="2 (default): the grid's (target, size) parts shared between this process "
        "and a second one, at once, by the CPU seconds each took in the stored grid; 1: "
        "all in this one",
    )
    # a second process's share: a JSON list of [target, size]
    parser.add_argument("--parts", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    # Compile only: TPU and GPU topologies are described under the CPU platform, and the
    # CUDA plugin must not look for a GPU when JAX starts (FACTS: cuInit fails). JAX reads
    # this when it is first imported, so `nox -s planner` sets it too. Two processes that
    # both compile for TPUs need libtpu's leave to load it twice (nothing runs on a TPU).
    os.environ["JAX_PLATFORMS"] = "cpu"
    os.environ["ALLOW_MULTIPLE_LIBTPU_LOAD"] = "1"

    from docs_build.devices import use_cpu_devices

    use_cpu_devices(DEVICES)
    started = time.perf_counter()
    parts = (
        [tuple(p) for p in json.loads(args.parts)]
        if args.parts
        else [(t, c) for t in args.targets for c in args.configs if c in configs_of(t)]
    )
    second = None
    if args.jobs == 2 and len(parts) > 1:
        # each process keeps about one core busy: the other core takes the second share
        parts, theirs = share(parts, stored_seconds(args.out))
        other = args.out.with_name(args.out.name + ".second")
        second = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "docs_build.planner_grid",
                "--jobs",
                "1",
                "--parts",
                json.dumps(theirs),
                "--out",
                str(other),
            ]
        )
    entries, refused = [], []
    devices_for: dict[str, object] = {}
    for target, config in parts:
        if target not in devices_for:
            try:
                devices_for[target] = tg.devices(target)
            except Exception as err:  # recorded for each entry of the target, below
                devices_for[target] = err
        devices = devices_for[target]
        for shape in meshes_of(target, config):
            try:
                if isinstance(devices, Exception):
                    raise devices
                entry = describe(target, config, shape, devices)
            except Exception as err:
                entry = {
                    "target": target,
                    "config": config,
                    "mesh": list(shape),
                    "devices": math.prod(shape),
                    "error": f"{type(err).__name__}: {err}"[:2000],
                }
            entries.append(entry)
            print(_line(entry), flush=True)
        for shape in REFUSED.get(target, ()) if config in LARGE_CONFIGS else ():
            entry = {"target": target, "config": config, "mesh": list(shape)}
            if isinstance(devices, Exception):  # not a refusal of the mesh
                entries.append(
                    entry | {"error": f"{type(devices).__name__}: {devices}"}
                )
                continue
            try:
                compile_step(config, shape, devices)
            except Exception as err:
                refused.append(entry | {"refusal": f"{type(err).__name__}: {err}"})
                print(f"{_line(entry)} refused, as expected", flush=True)
            else:
                entries.append(entry | {"error": "compiled, though REFUSED says not"})
    if second is not None:
        if second.wait() and not other.exists():  # an entry's error is recorded in it
            raise SystemExit("the second process stopped: see above")
        theirs_found = json.loads(other.read_text())
        other.unlink()
        entries += theirs_found["entries"]
        refused += theirs_found["refused"]
    # the grid's order, whichever process compiled what: targets, sizes, then meshes
    order = {
        (t, c): i
        for i, (t, c) in enumerate((t, c) for t in args.targets for c in args.configs)
    }
    entries.sort(
        key=lambda e: order[e["target"], e["config"]]
    )  # stable: meshes keep theirs
    refused.sort(key=lambda e: order[e["target"], e["config"]])
    result = {
        "generated": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d"),
        "seconds": round(time.perf_counter() - started, 1),
        "versions": records.versions("tpu") | records.versions("gpu"),
        "inputs": inputs_digest(),
        "axes": ["data", "fsdp", "tensor"],
        "configs": {
            name: {"batch": batch, **dataclasses.asdict(_config(name))}
            for name, (_, batch) in ALL_CONFIGS.items()
            if name in args.configs
        },
        "targets": list(args.targets),
        "entries": entries,
        "refused": refused,
    }
    args.out.write_text(records.dump(result))
    print(f"{len(entries)} programs in {result['seconds']} s -> {args.out}")
    return 1 if any("error" in e for e in entries) else 0


def stored_seconds(path: Path) -> dict[tuple[str, str], float]:
    """(target, size) -> the CPU seconds its entries took in the grid stored at `path`
    (empty if there is none)."""
    try:
        stored = json.loads(path.read_text())["entries"]
    except (OSError, ValueError, KeyError):
        return {}
    found: dict[tuple[str, str], float] = {}
    for e in stored:
        key = (e["target"], e["config"])
        found[key] = found.get(key, 0.0) + e.get("compile_cpu_seconds", 0.0)
    return found


def share(
    parts: list[tuple[str, str]], seconds: dict[tuple[str, str], float]
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Two shares of `parts` whose stored seconds are near equal: the longest first, each
    to the share with less so far (a part never compiled counts as the mean)."""
    known = [seconds[p] for p in parts if p in seconds]
    mean = sum(known) / len(known) if known else 1.0
    shares: tuple[list, list] = ([], [])
    totals = [0.0, 0.0]
    for part in sorted(parts, key=lambda p: -seconds.get(p, mean)):
        i = 0 if totals[0] <= totals[1] else 1
        shares[i].append(part)
        totals[i] += seconds.get(part, mean)
    return shares


def _config(name: str):
    from snippets.advanced.transformer.model import Config

    return Config(**ALL_CONFIGS[name][0])


def _line(entry: dict) -> str:
    head = f"{entry['target']:<10} {entry['config']:<17} {entry['mesh']!s:<12}"
    if "summary" not in entry:  # an error, or a refusal (printed by the caller)
        return head + (f" ERROR {entry['error'][:300]}" if "error" in entry else "")
    wire = sum(s["wire_bytes"] for s in entry["summary"].values()) / 2**20
    kinds = ", ".join(f"{s['runs']} {k}" for k, s in entry["summary"].items())
    return f"{head} {entry['compile_seconds']:>6.2f} s {wire:>9.2f} MiB  {kinds}"


if __name__ == "__main__":
    raise SystemExit(main())
