"""The worker's code in this single process of 8 devices, where it must give the same result.

Run `python -m snippets.training.multi_host.one_process` to print what the page shows.
"""

import jax
import numpy as np
from flax import nnx
from jax.sharding import Mesh

# On the page, these are defined by earlier blocks.
from snippets.models import train_reference
from snippets.training.multi_host.worker import (
    data_mesh,
    dataset,
    global_batch,
    my_rows,
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
    mesh = data_mesh()
    rows = my_rows(mesh, batch=64)
    x, y = dataset(steps=5, batch=64, rows=rows)
    print("this process's rows:", rows)
    print("what it loaded:", x.shape, y.shape)
    x0, y0 = global_batch(mesh, x[0], y[0], batch=64)
    print("one global batch:", jax.typeof(x0), jax.typeof(y0))
    print("rows per device:", {s.data.shape[0] for s in x0.addressable_shards})
    # --8<-- [end:global-batch-here]
    return mesh, x, y


def train_here(
    mesh: Mesh, x: np.ndarray, y: np.ndarray
) -> tuple[list, dict, list, nnx.Module]:
    # --8<-- [start:train-here]
    losses, weights = train(mesh, x, y, batch=64)
    ref_losses, ref_model = train_reference(steps=5, batch=64)
    print("losses:           ", np.round(losses, 3))
    print("train_reference:  ", np.round(ref_losses, 3))
    ref_weights = named_weights(ref_model)
    gap = max(np.abs(weights[k] - ref_weights[k]).max() for k in weights)
    print(f"weights within {1e-5:g} of train_reference: {gap <= 1e-5}")
    # --8<-- [end:train-here]
    return losses, weights, ref_losses, ref_model


def bad_batch(mesh: Mesh) -> None:
    # --8<-- [start:bad-batch]
    try:
        my_rows(mesh, batch=60)
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:bad-batch]


def main() -> None:
    process_view()
    mesh, x, y = batch_here()
    train_here(mesh, x, y)
    bad_batch(mesh)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
