"""Reference solution of the exercise `ring_all_gather` (collectives).

Run `python -m snippets.exercises.ring_all_gather.solution` to see it.
"""

# --8<-- [start:imports]
import jax
import jax.numpy as jnp
from jax import P
from jax.sharding import Mesh

# --8<-- [end:imports]


# --8<-- [start:solution]
def ring_all_gather(x: jax.Array, mesh: Mesh) -> jax.Array:
    """Every device collects all of x, passing blocks round a ring (ppermute).

    Returns shape (devices, len(x)): row d is the copy of x that device d built.
    """
    if len(mesh.axis_names) != 1:
        raise ValueError(f"This needs a 1-D mesh, not {mesh.axis_names}.")
    (axis,) = mesh.axis_names
    n = mesh.shape[axis]
    if x.ndim != 1 or x.shape[0] % n:
        raise ValueError(
            f"x must be a vector whose length is a multiple of {n}: {x.shape}."
        )
    to_the_right = [(i, (i + 1) % n) for i in range(n)]  # (1)!

    def gather(block):
        me = jax.lax.axis_index(axis)
        blocks = jnp.zeros((n, *block.shape), block.dtype).at[me].set(block)
        passing = block
        for hop in range(1, n):  # (2)!
            passing = jax.lax.ppermute(passing, axis, to_the_right)
            blocks = blocks.at[(me - hop) % n].set(passing)  # (3)!
        return blocks.reshape(1, -1)  # (4)!

    ring = jax.shard_map(gather, mesh=mesh, in_specs=P(axis), out_specs=P(axis))
    return jax.jit(ring)(x)  # (5)!


# --8<-- [end:solution]


def main() -> None:
    from jax.sharding import AxisType, NamedSharding

    mesh = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Explicit,))
    x = jax.device_put(jnp.arange(16.0), NamedSharding(mesh, P("x")))
    print(ring_all_gather(x, mesh))


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
