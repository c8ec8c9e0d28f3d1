"""Saving from several processes: which blocks each one writes, the worker, the launcher.

    python -m snippets.advanced.checkpoints.processes --process-id 0 --port 12355 \\
        --path /tmp/checkpoint --out report-0.json

Started once per process by `launch_save` (or by hand, in two terminals), each process with 4
CPU devices; together they save the FSDP train state of the 8 devices. Like the multi-host
page's worker, running it does not ask for 8 local devices: it starts JAX's distributed
runtime instead. Run `python -m snippets.advanced.checkpoints.processes --launch` to start
both processes and print what each reported.
"""

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import jax
from jax.sharding import AxisType
from orbax.checkpoint import v1 as ocp

# On the page, these are defined by earlier blocks.
from snippets.advanced.checkpoints.state import (
    FSDP,
    array_name,
    sharded_train_state,
    state_of,
)

# The multi-host page's: how a process joins the run, and how the launcher watches them.
from snippets.training.multi_host.launch import free_port, supervise
from snippets.training.multi_host.worker import start_process


# --8<-- [start:blocks-written]
def block_text(index: tuple) -> str:
    """A block's index as NumPy writes it: "[:, 0:64]"; "whole" for all of it."""
    parts = [
        ":" if (s.start, s.stop) == (None, None) else f"{s.start}:{s.stop}"
        for s in index
    ]
    return "whole" if set(parts) <= {":"} else f"[{', '.join(parts)}]"


def blocks_written(state, devices) -> dict[str, str]:
    """For each array of `state`: the part that `devices` write to a checkpoint, as
    one range. Of a block that several devices hold, copy 0 is written: right for
    this state, whose only copied arrays are the scalar step counts."""
    written = {}
    for path, array in jax.tree.leaves_with_path(state):
        blocks = [
            shard.index
            for shard in array.addressable_shards
            if shard.device in devices and shard.replica_id == 0  # (1)!
        ]
        if not blocks:
            written[array_name(path)] = "nothing"
            continue
        merged = tuple(
            slice(*array_range(array.shape[dim], [b[dim] for b in blocks]))
            for dim in range(array.ndim)
        )
        written[array_name(path)] = block_text(merged)
    return written


def array_range(size: int, slices: list[slice]) -> tuple:
    """The range covered by `slices` of a dimension of `size`: (None, None) if all."""
    start = min(s.start or 0 for s in slices)
    stop = max(size if s.stop is None else s.stop for s in slices)
    return (None, None) if (start, stop) == (0, size) else (start, stop)


# --8<-- [end:blocks-written]


def by_process_here(saved: dict) -> list[dict[str, str]]:
    # --8<-- [start:by-process-here]
    first, second = jax.devices()[:4], jax.devices()[4:]
    columns = [blocks_written(saved, first), blocks_written(saved, second)]
    print(f"{'array':<38}{'devices 0-3':<14}devices 4-7")
    for name in columns[0]:
        print(f"{name:<38}{columns[0][name]:<14}{columns[1][name]}")
    # --8<-- [end:by-process-here]
    return columns


# --8<-- [start:save-worker]
def save_from_this_process(path: Path) -> dict[str, str]:
    """Run in every process: build the FSDP train state over the devices of all
    processes and save it. Returns what this process writes."""
    data_mesh = jax.make_mesh(
        (jax.device_count(),), ("data",), axis_types=(AxisType.Auto,)
    )  # (1)!
    model, optimizer = sharded_train_state(data_mesh, FSDP)  # (2)!
    state = state_of(model, optimizer)
    mine = blocks_written(state, jax.local_devices())
    ocp.save(path, state)  # (3)!
    return mine


# --8<-- [end:save-worker]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="one process of a two-process save")
    parser.add_argument("--process-id", type=int, required=True)
    parser.add_argument("--num-processes", type=int, default=2)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--path", type=Path, required=True, help="the checkpoint")
    parser.add_argument("--out", type=Path, required=True, help="the report (JSON)")
    args = parser.parse_args(argv)
    if not 0 <= args.process_id < args.num_processes:
        parser.error(f"--process-id must be in 0..{args.num_processes - 1}")
    start_process(args.process_id, args.num_processes, args.port)
    mine = save_from_this_process(args.path)
    report = {
        "process": jax.process_index(),
        "devices": [d.id for d in jax.local_devices()],
        "writes": mine,
    }
    args.out.write_text(json.dumps(report), encoding="utf-8")


def launch_save(path: Path, num_processes: int = 2, timeout: float = 120.0):
    """Save the FSDP train state to `path` from `num_processes` processes of 4 CPU
    devices each; return what each process reported, with its log."""
    if num_processes not in (1, 2):
        raise ValueError(
            f"num_processes={num_processes}: use 1 or 2. Each process brings 4 "
            "devices, and FSDP splits the 8 values of down.bias over all of them."
        )
    # The workers run `python -m snippets...`: they start in the folder that holds it.
    root = Path(importlib.util.find_spec("snippets").origin).parents[1]
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        logs = [tmp / f"process-{i}.log" for i in range(num_processes)]
        procs = []
        for i, log in enumerate(logs):
            cmd = [
                *(sys.executable, "-m", "snippets.advanced.checkpoints.processes"),
                *("--process-id", str(i), "--num-processes", str(num_processes)),
                *("--port", str(port), "--path", str(path)),
                *("--out", str(tmp / f"report-{i}.json")),
            ]
            with log.open("w") as out:
                procs.append(subprocess.Popen(cmd, cwd=root, stdout=out, stderr=out))
        supervise(procs, logs, timeout)  # the multi-host page's: stops all if one fails
        return [
            {
                **json.loads((tmp / f"report-{i}.json").read_text(encoding="utf-8")),
                "log": log.read_text(),
            }
            for i, log in enumerate(logs)
        ]


def launch_and_print() -> None:
    with tempfile.TemporaryDirectory() as directory:
        saved_by_two = Path(directory) / "two-processes"
        for report in launch_save(saved_by_two):
            print(f"process {report['process']}, devices {report['devices']}, writes:")
            for name, part in report["writes"].items():
                print(f"  {name:<38}{part}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--launch"]:
        from docs_build.devices import use_cpu_devices

        use_cpu_devices(8)
        launch_and_print()
    else:
        main()
