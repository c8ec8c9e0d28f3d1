"""Meshes with a data and a model axis, and the model and the batch placed on them.

Run `python -m snippets.training.two_d.placement` to print what the page shows.
"""

# --8<-- [start:imports]
import math

import jax
from flax import nnx
from jax import P
from jax.sharding import AxisType, Mesh, NamedSharding

# --8<-- [end:imports]
# The page shows these by including the sections of snippets/models.py and of the
# tensor parallelism page's column_row.py.
from snippets.models import D_HIDDEN, D_IN, D_OUT, MLP, batches
from snippets.training.tensor_parallel.column_row import print_params, shard_params


# --8<-- [start:two-d-mesh]
def two_d_mesh(shape: tuple[int, int]) -> Mesh:
    """All the devices as a (data, model) grid of the given shape."""
    n = jax.device_count()
    if len(shape) != 2 or min(shape) < 1 or math.prod(shape) != n:
        raise ValueError(
            f"A mesh of shape {shape} does not hold the {n} devices: "
            f"give two sizes whose product is {n}, such as (2, {n // 2})."
        )
    auto = (AxisType.Auto, AxisType.Auto)
    return jax.make_mesh(shape, ("data", "model"), axis_types=auto)


# --8<-- [end:two-d-mesh]


def build_meshes() -> dict[tuple[int, int], Mesh]:
    # --8<-- [start:meshes]
    shapes = [(8, 1), (4, 2), (2, 4), (1, 8)]
    meshes = {shape: two_d_mesh(shape) for shape in shapes}
    for shape, mesh in meshes.items():
        print(f"{shape!s:<7}", mesh.device_ids.tolist())
    # --8<-- [end:meshes]
    return meshes


# --8<-- [start:shard-batch]
def shard_batch(x: jax.Array, y: jax.Array, mesh: Mesh):
    """Split the examples of (x, y) over the "data" axis of `mesh`."""
    n_data = mesh.shape["data"]
    if x.shape[0] != y.shape[0] or x.shape[0] % n_data:
        raise ValueError(
            f"A batch of {x.shape[0]} inputs and {y.shape[0]} targets does "
            f"not split over the {n_data} devices of the 'data' axis: make it "
            f"a multiple of {n_data}, or use fewer devices on 'data'."
        )
    by_example = NamedSharding(mesh, P("data"))  # (1)!
    return jax.device_put(x, by_example), jax.device_put(y, by_example)


# --8<-- [end:shard-batch]


def place_on_2x4(meshes: dict[tuple[int, int], Mesh]):
    # --8<-- [start:place-2x4]
    column_row = {  # as on the tensor parallelism page
        "up.kernel": P(None, "model"),
        "up.bias": P("model"),
        "down.kernel": P("model", None),
        "down.bias": P(),
    }
    mesh = meshes[(2, 4)]
    model = MLP(D_IN, D_HIDDEN, D_OUT, rngs=nnx.Rngs(0))
    shard_params(model, mesh, column_row)
    print_params(model)

    x, y = shard_batch(*batches(5, 64)[0], mesh)
    print("\nx:", x.shape, x.sharding.spec)
    print("per device:", x.addressable_shards[0].data.shape)
    # --8<-- [end:place-2x4]
    return column_row, mesh, model, x, y


def draw_2x4(model: MLP, x: jax.Array) -> None:
    # --8<-- [start:draw-2x4]
    print("down.kernel (128, 8): rows split over 'model'")
    jax.debug.visualize_array_sharding(model.down.kernel[...])
    print("x (64, 32): rows split over 'data'")
    jax.debug.visualize_array_sharding(x)
    # --8<-- [end:draw-2x4]


def main() -> None:
    meshes = build_meshes()
    _, _, model, x, _ = place_on_2x4(meshes)
    draw_2x4(model, x)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
