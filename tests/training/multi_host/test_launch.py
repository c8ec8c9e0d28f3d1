import socket
import subprocess
import sys
import time

import pytest

from snippets.training.multi_host import launch


def start(code: str, log):
    return subprocess.Popen(
        [sys.executable, "-c", code], stdout=log, stderr=subprocess.STDOUT
    )


def test_free_port_can_be_bound():
    port = launch.free_port()
    assert 1024 <= port < 65536
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))


def test_a_failing_process_stops_the_others_and_shows_every_log(tmp_path):
    logs = [tmp_path / "0.log", tmp_path / "1.log"]
    with logs[0].open("w") as a, logs[1].open("w") as b:
        procs = [
            start("import time; print('waiting', flush=True); time.sleep(60)", a),
            start("import sys; print('giving up'); sys.exit(3)", b),
        ]
    began = time.monotonic()
    with pytest.raises(launch.LaunchError) as err:
        launch.supervise(procs, logs, timeout=60)
    assert time.monotonic() - began < 30
    assert procs[0].returncode is not None  # the sleeper was stopped
    message = str(err.value)
    assert message.startswith(
        "process 1 exited with code 3; the other processes were stopped."
    )
    assert "--- log of process 0 ---\nwaiting" in message
    assert "--- log of process 1 ---\ngiving up" in message


def test_a_run_past_its_timeout_is_stopped(tmp_path):
    logs = [tmp_path / "0.log"]
    with logs[0].open("w") as log:
        procs = [start("import time; time.sleep(60)", log)]
    with pytest.raises(launch.LaunchError, match=r"^the run took more than 0.5 s"):
        launch.supervise(procs, logs, timeout=0.5)
    assert procs[0].returncode is not None


def test_processes_that_succeed_return_quietly(tmp_path):
    logs = [tmp_path / "0.log", tmp_path / "1.log"]
    with logs[0].open("w") as a, logs[1].open("w") as b:
        procs = [start("pass", a), start("print('done')", b)]
    assert launch.supervise(procs, logs, timeout=60) is None
    assert [p.returncode for p in procs] == [0, 0]
