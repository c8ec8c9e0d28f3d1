"""What each mesh shape costs: bytes per device, and the bytes the collectives carry.

Run `python -m snippets.training.two_d.communication` to print what the page shows.
"""

# --8<-- [start:imports]
from typing import NamedTuple

import jax
import optax
from flax import nnx

# --8<-- [end:imports]
# The page shows these by including the sections of snippets/models.py, hlo.py, the
# tensor parallelism page's column_row.py and placement.py.
from snippets.hlo import print_collectives, read_collectives
from snippets.models import D_HIDDEN, D_IN, D_OUT, MLP, batches, train_step
from snippets.training.tensor_parallel.column_row import shard_params
from snippets.training.two_d.placement import shard_batch, two_d_mesh


# --8<-- [start:prepare]
def step(model, optimizer, x, y):
    loss = train_step(model, optimizer, x, y)
    return loss, model, optimizer


class Run(NamedTuple):
    model: nnx.Module
    optimizer: nnx.Optimizer
    data: list
    compiled: jax.stages.Compiled


def prepare(shape, column_row, batch=64, steps=5) -> Run:
    """Model, optimizer and data on a `shape` mesh, and the step compiled."""
    mesh = two_d_mesh(shape)
    model = MLP(D_IN, D_HIDDEN, D_OUT, rngs=nnx.Rngs(0))
    shard_params(model, mesh, column_row)
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    data = [shard_batch(x, y, mesh) for x, y in batches(steps, batch)]
    compiled = jax.jit(step).lower(model, optimizer, *data[0]).compile()
    return Run(model, optimizer, data, compiled)


# --8<-- [end:prepare]


def prepare_all(column_row: dict, meshes: dict) -> dict:
    # --8<-- [start:prepare-all]
    runs = {shape: prepare(shape, column_row) for shape in meshes}
    print_collectives(runs[(2, 4)].compiled)
    # --8<-- [end:prepare-all]
    return runs


def one_step_in_detail(runs: dict) -> None:
    # --8<-- [start:bytes-2x4]
    print_collectives(runs[(2, 4)].compiled, per_collective=True)
    # --8<-- [end:bytes-2x4]


# --8<-- [start:formulas]
# up.kernel, up.bias and down.kernel are split over "model"; down.bias is not
PARAMS_SPLIT = D_IN * D_HIDDEN + D_HIDDEN + D_HIDDEN * D_OUT
PARAMS_WHOLE = D_OUT


def param_bytes(n_model):
    return 4 * (PARAMS_SPLIT // n_model + PARAMS_WHOLE)


def argument_bytes(n_data, n_model, batch):
    # parameters, Adam's mu and nu, this device's x and y, two int32 counters
    examples = batch // n_data
    return 3 * param_bytes(n_model) + 4 * examples * (D_IN + D_OUT) + 8


def all_reduce_bytes(n_data, n_model, batch):
    # forward, over "model": this device's rows of the output
    forward = 4 * (batch // n_data) * D_OUT if n_model > 1 else 0
    # backward, over "data": every gradient this device holds, and the loss
    gradients = param_bytes(n_model) + 4 if n_data > 1 else 0
    return forward + gradients


# --8<-- [end:formulas]


# --8<-- [start:memory-table]
def memory_table(runs) -> None:
    row = "{:<5}  {:>13}  {:>7}  {:>14}  {:>7}".format
    print(f"Bytes per device, {jax.default_backend()} backend")
    print(row("mesh", "params/device", "formula", "step arguments", "formula"))
    for (n_data, n_model), (model, _, data, compiled) in runs.items():
        params = jax.tree.leaves(nnx.state(model, nnx.Param))
        measured = sum(p.addressable_shards[0].data.nbytes for p in params)
        arguments = compiled.memory_analysis().argument_size_in_bytes  # (1)!
        batch = data[0][0].shape[0]
        print(
            row(
                f"{n_data} x {n_model}",
                measured,
                param_bytes(n_model),
                arguments,
                argument_bytes(n_data, n_model, batch),
            )
        )


# --8<-- [end:memory-table]


# --8<-- [start:communication-table]
def communication_table(runs) -> None:
    row = "{:<5}  {:>5}  {:<13}  {:>5}  {:>7}".format
    print(
        f"Collectives per step and their result bytes, {jax.default_backend()} backend"
    )
    print(row("mesh", "batch", "collectives", "bytes", "formula"))
    for (n_data, n_model), (_, _, data, compiled) in runs.items():
        found = read_collectives(compiled)
        kinds = sorted({c.kind for c in found})
        counts = [f"{sum(k == c.kind for c in found)} {k}" for k in kinds]
        batch = data[0][0].shape[0]
        print(
            row(
                f"{n_data} x {n_model}",
                batch,
                ", ".join(counts) or "none",
                sum(c.result_bytes for c in found),
                all_reduce_bytes(n_data, n_model, batch),
            )
        )


# --8<-- [end:communication-table]


def tables(runs: dict) -> None:
    # --8<-- [start:tables]
    memory_table(runs)
    print()
    communication_table(runs)
    # --8<-- [end:tables]


def bigger_batch(column_row: dict, meshes: dict) -> dict:
    # --8<-- [start:bigger-batch]
    big = {shape: prepare(shape, column_row, 1024, steps=1) for shape in meshes}
    communication_table(big)
    # --8<-- [end:bigger-batch]
    return big


def main() -> None:
    from snippets.training.two_d import placement

    meshes = placement.build_meshes()
    column_row, *_ = placement.place_on_2x4(meshes)
    runs = prepare_all(column_row, meshes)
    one_step_in_detail(runs)
    tables(runs)
    bigger_batch(column_row, meshes)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
