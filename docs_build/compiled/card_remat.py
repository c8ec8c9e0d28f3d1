"""Time the transformer page's train step under each remat policy on one real GPU.

    python -m docs_build.compiled.card_remat --out gpu_card_remat.json [--policies ...]

Run on a machine with one NVIDIA GPU, in an environment with the CUDA plugin at the pinned
jax (as `verify_gpu` is; never in CI: the build needs no GPU). For each policy of
`model.REMAT_POLICIES`, in a process of its own (so that the allocator's peak belongs to that
policy alone), it builds the step at the planner grid's "page" size on a one-device mesh,
compiles it, and records: the compiled memory analysis (what `nox -s gpu` records without
the card), the FLOPs XLA counts, the allocator's peak after the timed steps
(`memory_stats()["peak_bytes_in_use"]`), the median of timed steps, and the losses, which
every policy must share (remat changes what is kept, not what is computed). The record goes
to results/gpu_card_remat.json, which the remat page reads.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODULE = "docs_build.compiled.card_remat"
CONFIG = "page"
PACKAGES = ("jax", "jaxlib", "jax-cuda13-plugin", "jax-cuda12-plugin", "flax", "optax")
WARM = 3
TIMED = 10


def _one(policy: str, out: Path, config: str = CONFIG) -> None:
    """One policy, in this process: compile, run, time, and write the record."""
    import jax

    from docs_build.compiled.verify_gpu import one_device_step

    remat = {"False": False, "True": True}.get(policy, policy)
    device = jax.devices()[0]
    state, tokens, lowered = one_device_step(config, remat=remat)
    started = time.perf_counter()
    compiled = lowered.compile()
    compile_seconds = time.perf_counter() - started
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    analysis = compiled.memory_analysis()
    memory = {
        k: int(getattr(analysis, f"{k}_size_in_bytes"))
        for k in ("argument", "output", "temp", "host_temp")
        if hasattr(analysis, f"{k}_size_in_bytes")
    }
    losses = []
    for _ in range(WARM):
        state, loss = compiled(state, tokens)
        losses.append(float(loss))
    times = []
    for _ in range(TIMED):
        started = time.perf_counter()
        state, loss = compiled(state, tokens)
        loss.block_until_ready()
        times.append(time.perf_counter() - started)
        losses.append(float(loss))
    stats = device.memory_stats() or {}
    out.write_text(
        json.dumps(
            {
                "policy": policy,
                "device": device.device_kind,
                "compile_seconds": round(compile_seconds, 1),
                "flops": float(cost.get("flops", 0.0)),
                "memory": memory,
                "peak_bytes_in_use": int(stats.get("peak_bytes_in_use", -1)),
                "bytes_limit": int(stats.get("bytes_limit", -1)),
                "seconds": sorted(times)[len(times) // 2],
                "all_seconds": times,
                "losses": losses,
            }
        )
    )


def _policies() -> list[str]:
    from snippets.advanced.transformer import model

    return [str(p) for p in model.REMAT_POLICIES if p != "full"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--policies", nargs="+")
    parser.add_argument("--config", default=CONFIG, help="a planner grid size")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        _one(args.one, args.out, args.config)
        return 0
    import importlib.metadata as metadata

    from docs_build.planner_grid import CONFIGS

    def version(name: str) -> str | None:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    # This process never touches the GPU (JAX would take most of its memory): each
    # policy's process does, one after another.
    record: dict = {
        "generated": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d"),
        "versions": {name: version(name) for name in PACKAGES},
        "config": args.config,
        "fields": CONFIGS[args.config][0],
        "batch": CONFIGS[args.config][1],
        "warm": WARM,
        "timed": TIMED,
        "policies": {},
    }
    env = {**os.environ, "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
    with tempfile.TemporaryDirectory() as tmp:
        for policy in args.policies or _policies():
            part = Path(tmp) / f"{policy}.json"
            command = [
                sys.executable,
                "-m",
                MODULE,
                "--one",
                policy,
                "--out",
                str(part),
            ]
            command += ["--config", args.config]
            done = subprocess.run(command, env=env, capture_output=True, text=True)
            if done.returncode or not part.exists():
                tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
                record["policies"][policy] = {"error": "\n".join(tail)}
            else:
                record["policies"][policy] = json.loads(part.read_text())
            print(policy, json.dumps(record["policies"][policy])[:300], flush=True)
            args.out.write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
