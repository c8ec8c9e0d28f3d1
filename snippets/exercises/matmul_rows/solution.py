"""Reference solution of the exercise `matmul_rows` (explicit sharding).

Run `python -m snippets.exercises.matmul_rows.solution` to see it on 8 devices.
"""

# --8<-- [start:imports]
import jax
import jax.numpy as jnp
from jax import P
from jax.sharding import Mesh, NamedSharding

# --8<-- [end:imports]


# --8<-- [start:solution]
def matmul_rows(x: jax.Array, w: jax.Array, mesh: Mesh) -> jax.Array:
    """x @ w on an Explicit mesh: rows of the result over "x", columns whole."""
    if "x" not in mesh.axis_names:
        raise ValueError(f"The mesh has axes {mesh.axis_names}; this needs 'x'.")
    rows = NamedSharding(mesh, P("x", None))  # (1)!
    return jnp.matmul(x, w, out_sharding=rows)  # (2)!


# --8<-- [end:solution]


def main() -> None:
    import numpy as np
    from jax.sharding import AxisType

    mesh = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)
    x = jax.device_put(np.ones((8, 16)), NamedSharding(mesh, P("x", "y")))
    w = jax.device_put(np.ones((16, 4)), NamedSharding(mesh, P("y", None)))
    print(jax.typeof(matmul_rows(x, w, mesh)))


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
