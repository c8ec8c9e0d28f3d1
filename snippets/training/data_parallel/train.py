"""Data-parallel training: the batch split over a "data" axis, the parameters replicated.

Run `python -m snippets.training.data_parallel.train` to print what the page shows.
"""

# --8<-- [start:imports]
import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np
import optax
from flax import nnx
from jax import P
from jax.sharding import AxisType, NamedSharding

# --8<-- [end:imports]
# On the page, these are defined by earlier blocks (the included model sections).
from snippets.models import (
    D_HIDDEN,
    D_IN,
    D_OUT,
    MLP,
    batches,
    train_reference,
    train_step,
)

Mesh = jax.sharding.Mesh  # for the type hints; the page's code does not use it
STEPS, BATCH = 5, 64  # what train_reference uses by default


def build_mesh() -> Mesh:
    # --8<-- [start:mesh]
    mesh = jax.make_mesh((8,), ("data",), axis_types=(AxisType.Explicit,))
    print(mesh)
    # --8<-- [end:mesh]
    return mesh


# --8<-- [start:shard-batch]
def shard_batch(x, mesh):
    """Split dimension 0 of `x` (the examples) over the mesh axis "data"."""
    if "data" not in mesh.axis_names:
        raise ValueError(
            f"shard_batch needs a mesh axis named 'data', but the mesh only "
            f"has {mesh.axis_names}: name one of its axes 'data'."
        )
    devices = mesh.shape["data"]
    if x.ndim == 0 or x.shape[0] % devices:
        raise ValueError(
            f"a batch of shape {x.shape} cannot be split evenly over the "
            f"{devices} devices of mesh axis 'data': make the batch size "
            f"(dimension 0) a multiple of {devices}."
        )
    return jax.device_put(x, NamedSharding(mesh, P("data")))


# --8<-- [end:shard-batch]


def first_batch(mesh: Mesh) -> tuple[list, jax.Array, jax.Array]:
    # --8<-- [start:first-batch]
    data = batches(steps=5, batch=64)  # (1)!
    x, y = data[0]
    x, y = shard_batch(x, mesh), shard_batch(y, mesh)
    print("x:", jax.typeof(x), "  y:", jax.typeof(y))
    print("one device holds x", x.addressable_shards[0].data.shape)
    # --8<-- [end:first-batch]
    return data, x, y


def uneven_batch(mesh: Mesh) -> None:
    # --8<-- [start:uneven-batch]
    try:
        shard_batch(jnp.zeros((60, D_IN)), mesh)
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:uneven-batch]


def unplaced_parameters(x: jax.Array, y: jax.Array) -> tuple:
    # --8<-- [start:unplaced]
    model = MLP(D_IN, D_HIDDEN, D_OUT, rngs=nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    step = nnx.jit(train_step)  # (1)!
    print("up.kernel lives on", model.up.kernel[...].devices())
    try:
        step(model, optimizer, x, y)
    except Exception as err:  # (2)!
        print(f"{type(err).__name__}: {err}")
    # --8<-- [end:unplaced]
    return model, optimizer, step


def replicate(model: MLP, optimizer: nnx.Optimizer, mesh: Mesh) -> None:
    # --8<-- [start:replicate]
    state = nnx.state((model, optimizer))  # (1)!
    state = jax.device_put(state, NamedSharding(mesh, P()))  # (2)!
    nnx.update((model, optimizer), state)
    kernel = model.up.kernel[...]
    print("up.kernel:", jax.typeof(kernel), kernel.sharding.spec)
    print("copies:", len(kernel.addressable_shards), "of shape", kernel.shape)
    # --8<-- [end:replicate]


def train(
    model: MLP, optimizer: nnx.Optimizer, step, data: list, mesh: Mesh
) -> tuple[list[float], jax.Array, jax.Array]:
    # --8<-- [start:train]
    losses = []
    for x, y in data:
        x, y = shard_batch(x, mesh), shard_batch(y, mesh)
        losses.append(float(step(model, optimizer, x, y)))  # (1)!
    print("losses:", np.round(losses, 3))
    print("replicated after training:", model.up.kernel[...].is_fully_replicated)
    # --8<-- [end:train]
    return losses, x, y


def plot_losses(losses: list[float]) -> None:
    # --8<-- [start:plot]
    plt.figure(figsize=(6, 3.2))
    plt.plot(range(1, len(losses) + 1), losses, marker="o")
    plt.xticks(range(1, len(losses) + 1))
    plt.xlabel("step")
    plt.ylabel("loss (mean squared error)")
    plt.title("Data-parallel training on 8 devices")
    plt.show()
    # --8<-- [end:plot]


def compare_with_reference(losses: list[float], model: MLP) -> tuple:
    # --8<-- [start:reference]
    ref_losses, ref_model = train_reference(steps=5, batch=64)  # (1)!
    loss_gap = np.max(np.abs(np.subtract(losses, ref_losses)) / ref_losses)
    param_gap = max(
        float(np.max(np.abs(np.asarray(a) - np.asarray(b))))  # (2)!
        for a, b in zip(
            jax.tree.leaves(nnx.state(model, nnx.Param)),
            jax.tree.leaves(nnx.state(ref_model, nnx.Param)),
            strict=True,
        )
    )
    print("one device:", np.round(ref_losses, 3))
    print(f"losses within a relative {1e-5:g}: {loss_gap <= 1e-5}")
    print(f"parameters within {1e-5:g}:       {param_gap <= 1e-5}")
    # --8<-- [end:reference]
    return ref_losses, ref_model


def main() -> None:
    mesh = build_mesh()
    data, x, y = first_batch(mesh)
    uneven_batch(mesh)
    model, optimizer, step = unplaced_parameters(x, y)
    replicate(model, optimizer, mesh)
    losses, x, y = train(model, optimizer, step, data, mesh)
    plot_losses(losses)
    compare_with_reference(losses, model)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
