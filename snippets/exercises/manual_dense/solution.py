"""Reference solution of the exercise `manual_dense` (three approaches).

Run `python -m snippets.exercises.manual_dense.solution` to see it on 8 devices.
"""

# --8<-- [start:imports]
import jax
from jax import P
from jax.sharding import Mesh

# --8<-- [end:imports]


# --8<-- [start:solution]
def manual_dense(
    x: jax.Array,
    W: jax.Array,
    b: jax.Array,
    mesh: Mesh,
) -> jax.Array:
    """sigmoid(x @ W + b) by shard_map; x and the rows of W split over "x"."""
    if "x" not in mesh.axis_names:
        raise ValueError(f"The mesh has axes {mesh.axis_names}; this needs 'x'.")

    def one_device(x, W, b):  # (1)!
        partial = x @ W
        total = jax.lax.psum(partial, "x")  # (2)!
        return jax.nn.sigmoid(total + b)

    layer = jax.shard_map(
        one_device,
        mesh=mesh,
        in_specs=(P("x"), P("x", None), P()),
        out_specs=P(),  # (3)!
    )
    return layer(x, W, b)


# --8<-- [end:solution]


def main() -> None:
    import numpy as np
    from jax.sharding import AxisType, NamedSharding

    mesh = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Explicit,))
    rng = np.random.default_rng(0)
    x, W, b = (rng.standard_normal(s, dtype=np.float32) for s in [32, (32, 4), 4])
    placed = [
        jax.device_put(a, NamedSharding(mesh, s))
        for a, s in zip((x, W, b), (P("x"), P("x", None), P()), strict=True)
    ]
    print(manual_dense(*placed, mesh), 1 / (1 + np.exp(-(x @ W + b))))


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
