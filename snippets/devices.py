"""Give this Python process N virtual CPU devices, before JAX starts its backend.

The tests, the docs build and the notebooks call `use_cpu_devices()` first; a reader pastes
the two `jax.config.update` lines from `snippets/cpu_devices.py`, which do the same thing.
The CPU platform is forced so that the examples see the same 8-device mesh on a laptop, on a
CI runner and on a machine with a GPU.
"""

from __future__ import annotations

import jax

DEFAULT_DEVICES = 8


class DeviceSetupError(RuntimeError):
    """JAX's backend is already running with a device count other than the one asked for."""


def use_cpu_devices(n: int = DEFAULT_DEVICES) -> list[jax.Device]:
    """Run JAX on `n` virtual CPU devices and return them.

    Must run before any JAX computation in this process. Calling it again with the same `n`
    is harmless; asking for a different `n` once JAX has started raises `DeviceSetupError`
    with what to do instead.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(
            f"use_cpu_devices needs a whole number of devices >= 1, got {n!r}."
        )
    try:
        jax.config.update("jax_platforms", "cpu")
        jax.config.update("jax_num_cpu_devices", n)
    except RuntimeError as err:
        # The backend is already up. That is fine if it already has what we want (for
        # example when the devices came from XLA_FLAGS, which the config cannot see).
        if _has_cpu_devices(n):
            return jax.devices()
        raise DeviceSetupError(_restart_advice(n)) from err
    if not _has_cpu_devices(n):
        # jax_platforms is only read when the backend starts, so an earlier start on a GPU
        # (or with another count) shows up here rather than as an exception above.
        raise DeviceSetupError(_restart_advice(n))
    return jax.devices()


def _has_cpu_devices(n: int) -> bool:
    devices = jax.devices()
    return len(devices) == n and all(d.platform == "cpu" for d in devices)


def _restart_advice(n: int) -> str:
    devices = jax.devices()
    platforms = sorted({d.platform for d in devices})
    return (
        f"JAX already started with {len(devices)} {'/'.join(platforms)} device(s), so it cannot "
        f"switch to {n} virtual CPU devices in this process. Restart the Python interpreter (in "
        f"Jupyter: restart the kernel) and set the device count before any other JAX call, or "
        f"start Python with the environment variables JAX_PLATFORMS=cpu JAX_NUM_CPU_DEVICES={n}."
    )


if __name__ == "__main__":
    print(use_cpu_devices())
