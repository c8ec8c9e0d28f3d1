"""docs_build.devices and snippets.cpu_devices: 8 virtual CPU devices, or a clear error."""

import os
import subprocess
import sys
from pathlib import Path

import jax
import pytest

from docs_build.devices import DeviceSetupError, use_cpu_devices

ROOT = Path(__file__).resolve().parent.parent


def run_python(code: str, **env: str) -> subprocess.CompletedProcess:
    """Run `code` in a fresh interpreter, as a reader would, with only `env` added."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "XLA_"))}
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**clean, "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_repeat_call_with_same_count_returns_the_devices(devices):
    assert use_cpu_devices(8) == devices


def test_other_count_after_start_says_to_restart():
    with pytest.raises(DeviceSetupError) as info:
        use_cpu_devices(4)
    message = str(info.value)
    assert "already started with 8 cpu device(s)" in message
    assert "Restart the Python interpreter" in message
    assert "JAX_NUM_CPU_DEVICES=4" in message
    assert len(jax.devices()) == 8


@pytest.mark.parametrize("bad", [0, -2, 2.5, "8", True])
def test_rejects_counts_that_are_not_positive_whole_numbers(bad):
    with pytest.raises(ValueError, match="whole number of devices"):
        use_cpu_devices(bad)


@pytest.mark.slow
def test_readers_setup_lines_give_eight_cpu_devices():
    proc = run_python(
        "import snippets.cpu_devices, jax; d = jax.devices(); print(len(d), d[0].platform)"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["8", "cpu"]


@pytest.mark.slow
def test_fresh_process_started_with_two_devices_gets_the_clear_error():
    proc = run_python(
        "import jax, jax.numpy as jnp; jnp.zeros(1)\n"
        "from docs_build.devices import use_cpu_devices\n"
        "use_cpu_devices(8)",
        JAX_NUM_CPU_DEVICES="2",
    )
    assert proc.returncode != 0
    last_line = proc.stderr.strip().splitlines()[-1]
    assert last_line.startswith(
        "docs_build.devices.DeviceSetupError: JAX already started with 2 cpu"
    )
    assert "JAX_NUM_CPU_DEVICES=8" in last_line


@pytest.mark.slow
def test_devices_from_xla_flags_are_accepted_after_start():
    # With XLA_FLAGS the config reads -1, so jax refuses even an update to the same count.
    proc = run_python(
        "import jax, jax.numpy as jnp; jnp.zeros(1)\n"
        "from docs_build.devices import use_cpu_devices\n"
        "print(len(use_cpu_devices(8)))",
        XLA_FLAGS="--xla_force_host_platform_device_count=8",
        JAX_PLATFORMS="cpu",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["8"]
