"""Reference solution of the exercise `column_sums` (automatic sharding).

Run `python -m snippets.exercises.column_sums.solution` to see it on 8 devices.
"""

# --8<-- [start:imports]
import jax
from jax import P
from jax.sharding import Mesh, NamedSharding

# --8<-- [end:imports]


# --8<-- [start:solution]
def column_sums(x: jax.Array, mesh: Mesh) -> jax.Array:
    """The sum of each column of the 2-D x, as a whole copy on every device."""
    if x.ndim != 2:
        raise ValueError(f"column_sums needs a 2-D x, not shape {x.shape}.")
    everywhere = NamedSharding(mesh, P())  # (1)!
    sums = jax.jit(lambda a: a.sum(axis=0), out_shardings=everywhere)  # (2)!
    return sums(x)


# --8<-- [end:solution]


def main() -> None:
    import numpy as np
    from jax.sharding import AxisType

    mesh = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    values = np.arange(32.0).reshape(8, 4)
    x = jax.device_put(values, NamedSharding(mesh, P("x", "y")))
    sums = column_sums(x, mesh)
    print(sums, sums.sharding.spec, sums.sharding.is_fully_replicated)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
