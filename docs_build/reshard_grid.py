"""Compile a grid of reshards, one spec to another, for the sharding explorer's collectives.

    python -m docs_build.reshard_grid [--out F]

(`nox -s reshard` runs it, in the environment with libtpu and the CUDA plugin together:
the `compiled` dependency group.) Each case is an array on a mesh
under a source `PartitionSpec`, and the program `jax.jit(lambda a: a, out_shardings=target)`:
all it does is move the array to the target spec, so the collectives in its compiled HLO are
what JAX inserts for that move. Every case is compiled for the CPU backend (meshes of 3 to
256 devices) and, for the 8-device meshes, for two TPU slices (v5e:2x4, v5p:2x2x2) and one
H100 node (h100:1x8; the worker runs with JAX_PLATFORMS=cpu, which the plugin needs). Stored
per case and target: the collectives as the HLO reader reads them (docs_build/hlo.py): kind,
devices per group, number of groups (of pairs, for a collective-permute) and wire bytes sent
per device (ring model), in the order the program runs them.

The explorer's script (docs/javascripts/sharding-explorer.js, `reshard`) names these plans
from rules; tests/docs_build/test_reshard_grid.py runs it over every case under Node, and
tests/browser/test_explorer.py types every case into the page. Nothing runs on a TPU or a
GPU: these are the programs they would run, as their compilers planned them.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import itertools
import json
import math
import os
import random
import subprocess
import sys
import time
from pathlib import Path

from docs_build import explorer, hlo
from docs_build.compiled import records
from docs_build.compiled import targets as tg

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "reshard_grid.json"
TPU_TARGETS = ("v5e:2x4", "v5p:2x2x2")
GPU_TARGETS = ("h100:1x8",)
# The pyproject dependency groups whose pins the grid's environment holds (the `compiled`
# group includes both).
FAMILIES = ("tpu", "gpu")
CPU_DEVICES = 256
PAIRS = 12  # per mesh and shape
DTYPES = ("float32", "bfloat16", "int8")
# Each mesh with array shapes that many of its specs divide: 1 to 4 dimensions, sizes with a
# factor of three for the meshes that have one. The 8-device meshes, compiled for TPUs and
# an H100 node too, have mostly arrays of 1,024 elements or more (smaller gathers may become
# all-reduces on a TPU) and one smaller array each.
MESHES = (
    ((8,), ("x",), ((48,), (64, 96), (32, 16, 16))),
    ((3,), ("x",), ((12,), (6, 9), (3, 6, 12))),
    ((2, 4), ("x", "y"), ((64, 32), (16, 16, 8), (8, 8, 2, 8))),
    ((4, 2), ("data", "model"), ((64, 32), (16, 16, 8), (8, 8, 8, 2))),
    ((2, 3), ("x", "y"), ((12, 6), (6, 12, 4), (12, 18))),
    ((4, 4), ("x", "y"), ((16, 32), (32, 16, 4), (8, 16, 16))),
    ((2, 2, 2), ("x", "y", "z"), ((16, 8, 16), (64, 32), (4, 4, 4, 4))),
    ((2, 2, 4), ("data", "fsdp", "tensor"), ((16, 8), (8, 16, 16), (16, 4, 8, 2))),
    ((16, 16), ("x", "y"), ((256, 32), (32, 64, 16), (16, 256))),
)
# The files whose text decides what the grid holds; a test compares their digests.
INPUTS = (
    "docs_build/hlo.py",
    "docs_build/reshard_grid.py",
    "docs_build/compiled/records.py",
    "docs_build/compiled/targets.py",
)


def inputs_digest() -> dict[str, str]:
    return {
        path: hashlib.sha256(
            (records.ROOT / path)
            .read_text(encoding="utf-8")
            .replace("\r\n", "\n")
            .encode()
        ).hexdigest()[:16]
        for path in INPUTS
    }


def specs(mesh: tuple[int, ...], names: tuple[str, ...], shape: tuple[int, ...]):
    """Every spec the explorer's menus offer that places `shape` on the mesh: each axis at
    most once, and each dimension divisible by the devices that split it."""
    size = dict(zip(names, mesh, strict=True))
    one = [entry or () for entry in explorer.spec_choices(names)]
    for spec in itertools.product(one, repeat=len(shape)):
        used = [a for entry in spec for a in entry]
        if len(used) == len(set(used)) and all(
            n % math.prod(size[a] for a in entry) == 0
            for n, entry in zip(shape, spec, strict=True)
        ):
            yield [list(entry) or None for entry in spec]


def cases() -> list[dict]:
    """For each mesh and shape, PAIRS (source, target) pairs of distinct specs, drawn with a
    fixed seed, with a dtype each."""
    rng = random.Random(0)
    found = []
    for mesh, names, shapes in MESHES:
        for shape in shapes:
            pool = list(specs(mesh, names, shape))
            pairs = [(a, b) for a, b in itertools.product(pool, pool) if a != b]
            for source, target in rng.sample(pairs, min(PAIRS, len(pairs))):
                found.append(
                    {
                        "mesh": list(mesh),
                        "names": list(names),
                        "shape": list(shape),
                        "dtype": rng.choice(DTYPES),
                        "source": source,
                        "target": target,
                    }
                )
    return found


def targets_of(case: dict) -> tuple[str, ...]:
    if math.prod(case["mesh"]) == 8:
        return ("cpu", *TPU_TARGETS, *GPU_TARGETS)
    return ("cpu",)


def plan(case: dict, devices: list) -> list[dict]:
    """The collectives of the compiled move, in program order."""
    import jax
    from jax.sharding import AxisType, NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = jax.make_mesh(
        tuple(case["mesh"]),
        tuple(case["names"]),
        axis_types=(AxisType.Auto,) * len(case["mesh"]),
        devices=devices[: math.prod(case["mesh"])],
    )
    source = jax.ShapeDtypeStruct(
        tuple(case["shape"]),
        case["dtype"],
        sharding=NamedSharding(mesh, P(*explorer.spec_entries(case["source"]))),
    )
    move = jax.jit(
        lambda a: a,
        out_shardings=NamedSharding(mesh, P(*explorer.spec_entries(case["target"]))),
    )
    program = hlo.read(move.lower(source).compile().as_text(), len(mesh.devices.flat))
    return [
        {
            "kind": c.kind,
            "group": c.group_size,
            "groups": len(c.groups),
            "wire": hlo.wire_bytes(c),
        }
        for c in program.collectives
    ]


def _worker(first: int) -> None:
    """Compile the grid's cases from `first` on, one JSON line each, in this process."""
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(CPU_DEVICES)
    import jax

    devices = {t: tg.devices(t) for t in (*TPU_TARGETS, *GPU_TARGETS)}
    devices["cpu"] = jax.devices()
    for index, case in enumerate(cases()[first:], start=first):
        plans = {t: plan(case, devices[t]) for t in targets_of(case)}
        print(json.dumps({"index": index, "plans": plans}), flush=True)


def compile_all(grid: list[dict]) -> None:
    """Fill each case's "plans", in worker processes: XLA aborts the process on some moves
    (a failed check, not an exception), so a worker that dies leaves its case marked with
    the compiler's last words and a new worker goes on from the next case."""
    first = 0
    while first < len(grid):
        proc = subprocess.run(
            [sys.executable, "-m", "docs_build.reshard_grid", "--worker", str(first)],
            capture_output=True,
            text=True,
            cwd=records.ROOT,
            # the CUDA plugin describes GPUs only when it is not asked to find one
            env={**os.environ, "JAX_PLATFORMS": "cpu"},
        )
        for line in proc.stdout.splitlines():
            done = json.loads(line)
            grid[done["index"]]["plans"] = done["plans"]
            first = done["index"] + 1
        if proc.returncode == 0:
            return
        checks = [ln for ln in proc.stderr.splitlines() if "Check failed" in ln]
        last = checks[-1] if checks else proc.stderr[-500:]
        # "F1125 03:06:19.73 27983 hlo_sharding_util.cc:3007] Check failed: ..." -> the check
        grid[first]["crash"] = last.split("] ", 1)[-1].strip()
        first += 1


def versions() -> dict[str, str | None]:
    """Python and every package of the families the grid is compiled with."""
    found: dict[str, str | None] = {}
    for family in FAMILIES:
        found |= records.versions(family)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        _worker(args.worker)
        return 0
    started = time.perf_counter()
    grid = cases()
    compile_all(grid)
    result = {
        "generated": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d"),
        "seconds": round(time.perf_counter() - started, 1),
        "versions": versions(),
        "inputs": inputs_digest(),
        "cases": grid,
    }
    args.out.write_text(records.dump(result))
    programs = sum(len(c.get("plans", {})) for c in grid)
    crashes = sum("crash" in c for c in grid)
    print(
        f"{len(grid)} cases, {programs} programs, {crashes} compiler aborts "
        f"in {result['seconds']} s -> {args.out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
