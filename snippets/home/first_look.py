"""The home page's example: an array split over a 2 x 4 mesh, and a jitted sum of its rows.

Run `python -m snippets.home.first_look` to print and draw what the home page shows.
"""

import jax

# --8<-- [start:imports]
import jax.numpy as jnp
from jax import P

# --8<-- [end:imports]


def first_look() -> tuple[jax.Array, jax.Array]:
    # --8<-- [start:example]
    mesh = jax.make_mesh((2, 4), ("rows", "cols"))  # 8 devices as a 2 x 4 grid
    x = jnp.arange(32.0).reshape(8, 4)
    x = jax.device_put(x, jax.NamedSharding(mesh, P("rows", "cols")))
    print(jax.typeof(x))  # each device holds a 4 x 1 block
    sums = jax.jit(lambda a: a.sum(axis=1))(x)  # each grid row adds its partial sums
    jax.debug.visualize_array_sharding(sums)  # which devices hold which sums
    # --8<-- [end:example]
    return x, sums


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    first_look()
