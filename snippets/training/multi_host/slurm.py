"""What `jax.distributed.initialize()` finds without arguments under Slurm, shown on this
machine: processes started with the variables Slurm's `srun` gives each task.

Run `python -m snippets.training.multi_host.slurm` to start two processes as one GPU each
and print what each one got. `--report` is what each started process runs.
"""

# --8<-- [start:imports]
import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import jax

# --8<-- [end:imports]
# On the page, these are defined by earlier blocks.
from snippets.training.multi_host.launch import free_port, supervise


# --8<-- [start:report]
def report() -> None:
    """Join the job with no arguments and say what this process got."""
    jax.config.update("jax_platforms", "cpu")  # this machine has no GPU
    jax.config.update("jax_num_cpu_devices", 2)
    jax.distributed.initialize()  # (1)!
    gpus = jax.config.values["jax_cuda_visible_devices"]  # (2)!
    print(
        f"process {jax.process_index()} of {jax.process_count()}:",
        f"{jax.local_device_count()} of {jax.device_count()} devices,",
        f"GPUs it would use: {gpus}",
    )


# --8<-- [end:report]


# --8<-- [start:like-srun]
def srun_variables(procid: int, ntasks: int, localid: int) -> dict:
    """What JAX reads of the variables srun sets in each task."""
    return {
        "SLURM_JOB_ID": "4242",  # (3)!
        "SLURM_STEP_NODELIST": "localhost",  # its first host runs the coordinator
        "SLURM_NTASKS": str(ntasks),  # the number of processes
        "SLURM_PROCID": str(procid),  # this process's id
        "SLURM_LOCALID": str(localid),  # its index among the tasks of its node
    }


def like_srun(local_ids: list, extra: dict | None = None, timeout=60.0) -> list:
    """Start one process per entry of `local_ids` (its SLURM_LOCALID) with srun's
    variables and `extra`; return what each printed."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    port = str(free_port())  # (4)!
    root = Path(importlib.util.find_spec("snippets").origin).parents[1]
    with tempfile.TemporaryDirectory() as tmp:
        logs = [Path(tmp) / f"process-{i}.log" for i in range(len(local_ids))]
        procs = []
        for i, (localid, log) in enumerate(zip(local_ids, logs, strict=True)):
            env = {**base, **srun_variables(i, len(local_ids), localid)}
            env.update(JAX_COORDINATOR_PORT=port, **(extra or {}))
            cmd = [
                sys.executable,
                "-m",
                "snippets.training.multi_host.slurm",
                "--report",
            ]
            with log.open("w") as out:
                proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=out, stderr=out)
            procs.append(proc)
        supervise(procs, logs, timeout)
        return [log.read_text() for log in logs]


# --8<-- [end:like-srun]


def main() -> None:
    # --8<-- [start:run-like-srun]
    for log in like_srun(local_ids=[0, 1]):  # one task per GPU, on one node
        print(log.strip())
    # --8<-- [end:run-like-srun]


if __name__ == "__main__":
    report() if sys.argv[1:] == ["--report"] else main()
