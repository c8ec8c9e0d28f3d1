"""Asking jax.jit for shardings: out_shardings on the results, in_shardings on the inputs.

Run `python -m snippets.concepts.automatic_sharding.jit_shardings` to print what the page shows.
"""

# --8<-- [start:imports]
import jax
import numpy as np
from jax import P
from jax.sharding import NamedSharding

# --8<-- [end:imports]
from snippets.concepts.automatic_sharding.propagation import show

Mesh = jax.sharding.Mesh  # for the type hints; the page's code does not use it


def replicated_output(x: jax.Array, mesh: Mesh) -> jax.Array:
    # --8<-- [start:out-replicated]
    everywhere = NamedSharding(mesh, P())
    doubled = show(lambda a: 2 * a, x, out_shardings=everywhere)
    print("each device holds", doubled.addressable_shards[0].data.shape)
    # --8<-- [end:out-replicated]
    return doubled


def place_with_in_shardings(mesh: Mesh) -> tuple[np.ndarray, NamedSharding, jax.Array]:
    # --8<-- [start:in-shardings]
    host = np.arange(32.0, dtype=np.float32).reshape(8, 4)  # a NumPy array
    grid = NamedSharding(mesh, P("x", "y"))
    doubled = show(lambda a: 2 * a, host, in_shardings=grid)
    # --8<-- [end:in-shardings]
    return host, grid, doubled


def mismatched_input(host: np.ndarray, grid: NamedSharding, mesh: Mesh) -> jax.Array:
    # --8<-- [start:in-shardings-mismatch]
    by_rows = jax.device_put(host, NamedSharding(mesh, P("x", None)))
    double_on_grid = jax.jit(lambda a: 2 * a, in_shardings=grid)
    try:
        double_on_grid(by_rows)
    except ValueError as err:
        print(f"ValueError: {err}")
    fixed = double_on_grid(jax.device_put(by_rows, grid))  # (1)!
    print("after device_put:", fixed.sharding.spec)
    # --8<-- [end:in-shardings-mismatch]
    return fixed


def main() -> None:
    from snippets.concepts.automatic_sharding import propagation

    mesh = propagation.build_mesh()
    x = propagation.place_input(mesh)
    replicated_output(x, mesh)
    host, grid, _ = place_with_in_shardings(mesh)
    mismatched_input(host, grid, mesh)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
