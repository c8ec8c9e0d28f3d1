"""Reference solution of the exercise `per_device_bytes` (2-D parallelism).

Run `python -m snippets.exercises.per_device_bytes.solution` to see a few sizes.
"""

# --8<-- [start:imports]
import math

import numpy as np
from jax import P
from jax.sharding import Mesh

# --8<-- [end:imports]


# --8<-- [start:solution]
def per_device_bytes(shape: tuple[int, ...], dtype, spec: P, mesh: Mesh) -> int:
    """Bytes of the block each device holds of an array of `shape`, as `spec`."""
    if len(spec) > len(shape):
        raise ValueError(f"{spec} has more entries than {shape} has dimensions.")
    block = []
    padded = (*spec, *[None] * (len(shape) - len(spec)))  # missing entries: None
    for size, entry in zip(shape, padded, strict=True):
        names = (entry,) if isinstance(entry, str) else entry or ()
        if unknown := [n for n in names if n not in mesh.axis_names]:
            raise ValueError(f"{spec} names {unknown}, not in {mesh.axis_names}.")
        ways = math.prod(mesh.shape[n] for n in names)  # (1)!
        if size % ways:
            raise ValueError(
                f"A dimension of size {size} does not split over {ways} devices "
                f"({spec} on a mesh of {dict(mesh.shape)}): make it a multiple "
                f"of {ways}."
            )
        block.append(size // ways)
    return math.prod(block) * np.dtype(dtype).itemsize  # (2)!


# --8<-- [end:solution]


def main() -> None:
    import jax
    import jax.numpy as jnp
    from jax.sharding import AxisType

    explicit = (AxisType.Explicit,) * 2
    mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=explicit)
    for spec in (P("data", None), P(None, "model"), P("data", "model"), P()):
        print(spec, per_device_bytes((64, 128), jnp.float32, spec, mesh))


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
