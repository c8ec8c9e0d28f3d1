"""Reference solution of the exercise `place_batch` (data parallelism).

Run `python -m snippets.exercises.place_batch.solution` to see it on 8 devices.
"""

# --8<-- [start:imports]
import jax
import numpy as np
from jax import P
from jax.sharding import Mesh, NamedSharding

# --8<-- [end:imports]


# --8<-- [start:solution]
def place_batch(x: np.ndarray, mesh: Mesh) -> jax.Array:
    """Split the examples (dimension 0) of x over mesh axis "data"."""
    if "data" not in mesh.axis_names:
        raise ValueError(
            f"place_batch needs a mesh axis named 'data'; this mesh has "
            f"{mesh.axis_names}."
        )
    n = mesh.shape["data"]  # (1)!
    if np.ndim(x) == 0 or np.shape(x)[0] % n:
        raise ValueError(
            f"A batch of shape {np.shape(x)} does not split over the {n} devices "
            f"of mesh axis 'data': make the batch size a multiple of {n}."  # (2)!
        )
    return jax.device_put(x, NamedSharding(mesh, P("data")))  # (3)!


# --8<-- [end:solution]


def main() -> None:
    from jax.sharding import AxisType

    explicit = (AxisType.Explicit,) * 2
    mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=explicit)
    print(jax.typeof(place_batch(np.zeros((8, 3)), mesh)))
    try:
        place_batch(np.zeros((5, 3)), mesh)
    except ValueError as err:
        print(f"ValueError: {err}")


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
