"""Where each block of an array lives under a spec: what the sharding explorer shows, from JAX.

The explorer on the page computes its answers in the browser; the build checks every one of a
grid of cases against `layout`, which asks JAX. Run
`python -m snippets.tools.sharding_explorer.layout` to print one case as the page does.
"""

# --8<-- [start:imports]
import math

import jax
import numpy as np
from jax import P
from jax.sharding import AxisType, NamedSharding

# --8<-- [end:imports]

# --8<-- [start:layout]
ITEMSIZE = {"float32": 4, "bfloat16": 2, "int8": 1}


def layout(shape, mesh_shape, axis_names, spec, dtype="float32"):
    """Each device's block of an array of `shape` placed by `spec` on a mesh, and its bytes;
    or JAX's error when the spec cannot place it."""
    if not 1 <= len(shape) <= 4 or min(shape) < 1:
        raise ValueError(f"Give an array of 1 to 4 positive sizes, not {shape}.")
    if len(mesh_shape) != len(axis_names) or not 1 <= len(mesh_shape) <= 3:
        raise ValueError("Give 1 to 3 mesh axes, one name per size.")
    if math.prod(mesh_shape) > jax.device_count():
        raise ValueError(
            f"A mesh of {math.prod(mesh_shape)} devices needs that many: this "
            f"process has {jax.device_count()} (set jax_num_cpu_devices)."
        )
    if dtype not in ITEMSIZE:
        raise ValueError(f"dtype must be one of {list(ITEMSIZE)}, not {dtype!r}.")
    devices = jax.devices()[: math.prod(mesh_shape)]
    explicit = (AxisType.Explicit,) * len(mesh_shape)
    mesh = jax.make_mesh(mesh_shape, axis_names, axis_types=explicit, devices=devices)
    try:
        sharding = NamedSharding(mesh, P(*spec))
        block = sharding.shard_shape(shape)  # (1)!
    except (
        Exception
    ) as err:  # DuplicateSpecError, IndivisibleError: JAX exports neither
        return {"error": f"{type(err).__name__}: {err}"}
    blocks = {}
    for device, index in sharding.devices_indices_map(shape).items():  # (2)!
        blocks[device.id] = [
            s.indices(n)[:2] for s, n in zip(index, shape, strict=True)
        ]
    return {
        "block": list(block),
        "bytes": math.prod(block) * ITEMSIZE[dtype],
        "blocks": [blocks[d.id] for d in np.ravel(mesh.devices)],  # (3)!
    }


# --8<-- [end:layout]


def show_one() -> dict:
    # --8<-- [start:one-case]
    found = layout((8, 6, 4), (2, 4), ("x", "y"), ("x", None, "y"))
    print("block per device:", found["block"], " bytes:", found["bytes"])
    for device, block in enumerate(found["blocks"][:3]):
        print(f"device {device}:", block)
    print(layout((6, 4), (2, 4), ("x", "y"), ("y", None))["error"])
    # --8<-- [end:one-case]
    return found


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    show_one()
