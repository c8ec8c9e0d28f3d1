"""Train, save, and resume from the checkpoint on another mesh: the losses carry on.

Run `python -m snippets.advanced.checkpoints.resume` to print what the page shows.
"""

import tempfile
from pathlib import Path

import jax
from flax import nnx
from jax import P
from jax.sharding import AxisType, Mesh, NamedSharding
from orbax.checkpoint import v1 as ocp

# On the page, these are defined by earlier blocks.
from snippets.advanced.checkpoints.state import (
    FSDP,
    TENSOR_PARALLEL,
    restore_train_state,
    sharded_train_state,
    state_of,
)
from snippets.models import batches, train_step


# --8<-- [start:train]
def train(model, optimizer, data, sharding: NamedSharding) -> list[float]:
    """One train_step per batch (x, y) of `data`, each placed by `sharding`."""
    step = nnx.jit(train_step)
    losses = []
    for x, y in data:
        x, y = jax.device_put((x, y), sharding)
        losses.append(float(step(model, optimizer, x, y)))
    return losses


# --8<-- [end:train]


def resume(data_mesh: Mesh, model_mesh: Mesh, directory: Path):
    # --8<-- [start:resume]
    data = batches(6, 64)
    split_batch = NamedSharding(data_mesh, P("data"))  # (1)!
    whole_batch = NamedSharding(model_mesh, P())

    model, optimizer = sharded_train_state(data_mesh, FSDP)
    train(model, optimizer, data[:3], split_batch)
    ocp.save(directory / "step-3", state_of(model, optimizer))
    kept_on = train(model, optimizer, data[3:], split_batch)  # (2)!

    model_tp, optimizer_tp = restore_train_state(
        directory / "step-3", model_mesh, TENSOR_PARALLEL
    )
    start = int(optimizer_tp.step[...])  # (3)!
    print("restored at step", start)
    resumed = train(model_tp, optimizer_tp, data[start:], whole_batch)

    print("step  kept on: FSDP, 8 devices  resumed: tensor parallel, 4 devices")
    for i, (a, b) in enumerate(zip(kept_on, resumed, strict=True), start=3):
        print(f"{i:>4}  {a:>25.3f}  {b:>36.3f}")
    gap = max(abs(a - b) for a, b in zip(kept_on, resumed, strict=True))
    print(f"within {1e-5:g} of each other: {gap <= 1e-5}")
    # --8<-- [end:resume]
    return kept_on, resumed, (model, optimizer), (model_tp, optimizer_tp)


def main() -> None:
    data_mesh = jax.make_mesh((8,), ("data",), axis_types=(AxisType.Auto,))
    model_mesh = jax.make_mesh(
        (4,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:4]
    )
    with tempfile.TemporaryDirectory() as directory:
        resume(data_mesh, model_mesh, Path(directory))


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
