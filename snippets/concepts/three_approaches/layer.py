"""The layer, its data, the NumPy answer, and how its inputs are placed on a mesh.

Run `python -m snippets.concepts.three_approaches.layer` to print what the page shows.
"""

# --8<-- [start:imports]
import jax
import numpy as np
from jax import P
from jax.sharding import Mesh, NamedSharding

# --8<-- [end:imports]


# --8<-- [start:dense]
def dense(x, W, b):
    """One dense layer: 32 inputs to 4 outputs, then a sigmoid."""
    return jax.nn.sigmoid(x @ W + b)


# --8<-- [end:dense]


def make_data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    # --8<-- [start:data]
    rng = np.random.default_rng(1701)
    x = rng.standard_normal(32, dtype=np.float32)
    W = rng.standard_normal((32, 4), dtype=np.float32)
    b = rng.standard_normal(4, dtype=np.float32)
    reference = 1 / (1 + np.exp(-(x @ W + b)))  # NumPy, on one device
    print("x", x.shape, " W", W.shape, " b", b.shape)
    print("reference:", reference.round(4))
    # --8<-- [end:data]
    return x, W, b, reference


# --8<-- [start:place-layer]
def place_layer(mesh: Mesh, x, W, b) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Split x and the rows of W over mesh axis "x"; copy b to every device."""
    names = mesh.axis_names
    if "x" not in names:
        raise ValueError(f"The mesh has axes {names}; this needs one named 'x'.")
    if np.ndim(x) != 1 or np.shape(W)[0] != np.shape(x)[0]:
        raise ValueError(
            f"x must be a vector with one entry per row of W; got x of shape "
            f"{np.shape(x)} and W of shape {np.shape(W)}."
        )
    n, features = mesh.shape["x"], np.shape(x)[0]
    if features % n:
        raise ValueError(
            f"{features} inputs do not split over the {n} devices of axis 'x': "
            f"use a multiple of {n} inputs, "
            f"or a mesh whose 'x' divides {features}."
        )
    return (
        jax.device_put(x, NamedSharding(mesh, P("x"))),  # (1)!
        jax.device_put(W, NamedSharding(mesh, P("x", None))),  # (2)!
        jax.device_put(b, NamedSharding(mesh, P())),  # (3)!
    )


# --8<-- [end:place-layer]


def main() -> None:
    make_data()


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
