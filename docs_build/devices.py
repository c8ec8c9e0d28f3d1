"""Give this Python process N virtual CPU devices, before JAX starts its backend.

The tests, the docs build and the notebooks call `use_cpu_devices()` first; a reader pastes
the two `jax.config.update` lines from `snippets/cpu_devices.py`, which do the same thing.
The CPU platform is forced so that the examples see the same 8-device mesh on a laptop, on a
CI runner and on a machine with a GPU.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import jax

# jax is imported inside the functions: the MkDocs hook reads CACHE_SETTINGS without paying
# for importing it.
DEFAULT_DEVICES = 8
# Compiled programs are kept here across processes: the tests, each page's run in the build
# and each notebook's kernel compile the same model inits and steps, and a hit costs
# milliseconds instead of seconds. Results are identical; only compile time is saved.
COMPILATION_CACHE = Path(__file__).resolve().parent.parent / ".cache" / "jax"
CACHE_SETTINGS = {  # environment variable: (default, type of the jax.config option)
    "JAX_COMPILATION_CACHE_DIR": (str(COMPILATION_CACHE), str),
    "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": ("0", float),
    "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": ("0", int),
}


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
    import jax

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


def use_compilation_cache() -> None:
    """Keep every compiled program in .cache/jax, unless the environment names a folder.

    Also sets the environment, so that subprocesses and notebook kernels share the cache.
    """
    import jax

    for name, (default, kind) in CACHE_SETTINGS.items():
        jax.config.update(name.lower(), kind(os.environ.setdefault(name, default)))


def _has_cpu_devices(n: int) -> bool:
    import jax

    devices = jax.devices()
    return len(devices) == n and all(d.platform == "cpu" for d in devices)


def _restart_advice(n: int) -> str:
    import jax

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
