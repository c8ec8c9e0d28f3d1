"""Start every process of a multi-process run on this machine, wait, and collect results.

Run `python -m snippets.training.multi_host.launch` to train on 2 processes x 4 CPU devices and
print what each process reported.
"""

# --8<-- [start:imports]
import importlib.util
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# --8<-- [end:imports]
import numpy as np

# On the page, these are defined by earlier blocks.
from snippets.training.multi_host.worker import dataset


# --8<-- [start:supervise]
class LaunchError(RuntimeError):
    """A process failed or the run timed out; the message has every log."""


def free_port() -> int:
    """A TCP port that nothing listens on right now, for the coordinator."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def supervise(procs: list, logs: list[Path], timeout: float) -> None:
    """Wait until every process has exited with 0. If one fails, or time runs
    out, stop the others and raise LaunchError with all the logs."""
    deadline = time.monotonic() + timeout
    while True:
        codes = [p.poll() for p in procs]
        failed = [i for i, code in enumerate(codes) if code]  # None: running
        if failed:
            problem = f"process {failed[0]} exited with code {codes[failed[0]]}"
            break
        if None not in codes:
            return  # every process exited with 0
        if time.monotonic() > deadline:
            problem = f"the run took more than {timeout:g} s"
            break
        time.sleep(0.05)
    for p in procs:
        if p.poll() is None:
            p.kill()  # (1)!
            p.wait()
    message = f"{problem}; the other processes were stopped."
    for i, log in enumerate(logs):
        message += f"\n--- log of process {i} ---\n{log.read_text()}"
    raise LaunchError(message)


# --8<-- [end:supervise]


# --8<-- [start:launch]
def worker_command(i: int, num_processes: int, port: int, tmp: Path) -> list:
    """The command line that starts process `i`."""
    options = {
        "--process-id": i,
        "--num-processes": num_processes,
        "--port": port,
        "--data": tmp,
        "--out": tmp / f"result-{i}.npz",
    }
    words = [str(w) for option in options.items() for w in option]
    return [sys.executable, "-m", "snippets.training.multi_host.worker", *words]


def launch(
    num_processes: int = 2,
    steps: int = 5,
    batch: int = 64,
    timeout: float = 120.0,
) -> list[dict]:
    """Run snippets.training.multi_host.worker as `num_processes` processes; return what
    each one wrote (its losses and final weights) and its log."""
    root = Path(importlib.util.find_spec("snippets").origin).parents[1]  # (1)!
    with tempfile.TemporaryDirectory() as tmp:
        tmp, port = Path(tmp), free_port()
        x, y = dataset(steps, batch)
        np.save(tmp / "x.npy", x)  # (2)!
        np.save(tmp / "y.npy", y)
        logs = [tmp / f"process-{i}.log" for i in range(num_processes)]
        procs = []
        for i, log in enumerate(logs):
            cmd = worker_command(i, num_processes, port, tmp)
            with log.open("w") as out:
                proc = subprocess.Popen(cmd, cwd=root, stdout=out, stderr=out)
            procs.append(proc)
        supervise(procs, logs, timeout)
        results = []
        for i, log in enumerate(logs):
            with np.load(tmp / f"result-{i}.npz") as saved:
                results.append({**saved, "log": log.read_text()})
        return results


# --8<-- [end:launch]


def main() -> None:
    # --8<-- [start:run-launch]
    results = launch(num_processes=2)
    for i, result in enumerate(results):
        print(f"process {i}: losses", result["losses"].round(3))
    # --8<-- [end:run-launch]


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
