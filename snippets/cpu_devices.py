"""The lines every page starts with: 8 virtual CPU devices, set before JAX starts.

Importing this module has that side effect, on purpose: it is exactly what a reader pastes
first. `docs_build.devices.use_cpu_devices` does the same with checks and clear errors.
"""

# --8<-- [start:setup]
import jax

jax.config.update("jax_platforms", "cpu")  # CPU, even on a GPU machine
jax.config.update("jax_num_cpu_devices", 8)  # as 8 devices
# --8<-- [end:setup]
