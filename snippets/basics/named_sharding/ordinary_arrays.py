"""Sharded arrays still behave like arrays: NumPy values, arithmetic, one difference.

Run `python -m snippets.basics.named_sharding.ordinary_arrays` to print what the page shows.
"""

# --8<-- [start:imports]
import jax
import jax.numpy as jnp
import numpy as np
from jax import P
from jax.sharding import Mesh, NamedSharding

# --8<-- [end:imports]


def gather_to_numpy(x: jax.Array, mesh_2x4: Mesh) -> tuple[jax.Array, np.ndarray]:
    # --8<-- [start:to-numpy]
    x_grid = jax.device_put(x, NamedSharding(mesh_2x4, P("x", "y")))
    host = np.asarray(x_grid)  # (1)!
    print(type(host).__name__, host.shape, host.dtype)
    print("same values as x:", np.array_equal(host, np.asarray(x)))
    # --8<-- [end:to-numpy]
    return x_grid, host


def arithmetic(x_grid: jax.Array, host: np.ndarray) -> dict[str, jax.Array]:
    # --8<-- [start:arithmetic]
    results = {
        "x_grid * 2 + 1": (x_grid * 2 + 1, host * 2 + 1),
        "jnp.exp(x_grid)": (jnp.exp(x_grid), np.exp(host)),
        "x_grid.T": (x_grid.T, host.T),
        "x_grid.sum(axis=1)": (x_grid.sum(axis=1), host.sum(axis=1)),
    }
    for expression, (result, expected) in results.items():
        same = np.allclose(result, expected)
        print(f"{expression:<20}{jax.typeof(result)!s:<18}matches NumPy: {same}")
    # --8<-- [end:arithmetic]
    return {expression: result for expression, (result, _) in results.items()}


def index_sharded_dimension(x_grid: jax.Array) -> jax.Array:
    # --8<-- [start:indexing]
    try:
        x_grid[0]
    except Exception as err:  # ShardingTypeError, not exported by jax
        print(f"{type(err).__name__}: {err}")
    print("after gathering:", np.asarray(x_grid)[0])
    # --8<-- [end:indexing]
    # --8<-- [start:indexing-answered]
    row_spec = NamedSharding(x_grid.sharding.mesh, P("y"))  # split like a row of x_grid
    row = x_grid.at[0].get(out_sharding=row_spec)
    print(jax.typeof(row), row)
    # --8<-- [end:indexing-answered]
    return row


def main() -> None:
    from snippets.basics.named_sharding import place_arrays

    _, mesh_2x4, _ = place_arrays.build_meshes()
    x = place_arrays.unplaced_array()
    x_grid, host = gather_to_numpy(x, mesh_2x4)
    arithmetic(x_grid, host)
    index_sharded_dimension(x_grid)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
