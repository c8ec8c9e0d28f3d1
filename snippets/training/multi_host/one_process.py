"""The worker's code in this single process of 8 devices, where it must give the same result.

Run `python -m snippets.training.multi_host.one_process` to print what the page shows.
"""

import jax
import numpy as np
from flax import nnx
from jax.sharding import AxisType, Mesh

# On the page, these are defined by earlier blocks.
from snippets.models import train_reference
from snippets.training.multi_host.worker import (
    dataset,
    global_batch,
    named_weights,
    train,
)


def process_view() -> None:
    # --8<-- [start:process-view]
    print("process", jax.process_index(), "of", jax.process_count())
    print("devices of this process:", jax.local_device_count())
    print("devices of the run:     ", jax.device_count())
    # --8<-- [end:process-view]


def batch_here() -> tuple[Mesh, np.ndarray, np.ndarray]:
    # --8<-- [start:global-batch-here]
    mesh = jax.make_mesh((8,), ("data",), axis_types=(AxisType.Explicit,))
    x, y = dataset(steps=5, batch=64)
    print("the data set:", x.shape, y.shape)
    x0, y0 = global_batch(mesh, x[0], y[0])
    print("one global batch:", jax.typeof(x0), jax.typeof(y0))
    print("rows per device:", {s.data.shape[0] for s in x0.addressable_shards})
    # --8<-- [end:global-batch-here]
    return mesh, x, y


def train_here(x: np.ndarray, y: np.ndarray) -> tuple[list, dict, list, nnx.Module]:
    # --8<-- [start:train-here]
    losses, weights = train(x, y)
    ref_losses, ref_model = train_reference(steps=5, batch=64)
    print("losses:           ", np.round(losses, 3))
    print("train_reference:  ", np.round(ref_losses, 3))
    ref_weights = named_weights(ref_model)
    gap = max(np.abs(weights[k] - ref_weights[k]).max() for k in weights)
    print(f"weights within {1e-5:g} of train_reference: {gap <= 1e-5}")
    # --8<-- [end:train-here]
    return losses, weights, ref_losses, ref_model


def bad_batch(mesh: Mesh, x: np.ndarray, y: np.ndarray) -> None:
    # --8<-- [start:bad-batch]
    try:
        global_batch(mesh, x[0, :60], y[0, :60])
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:bad-batch]


def main() -> None:
    process_view()
    mesh, x, y = batch_here()
    train_here(x, y)
    bad_batch(mesh, x, y)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
