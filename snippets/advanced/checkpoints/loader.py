"""A Grain data loader sharded per JAX process, its position saved with Orbax beside the
train state and the random key, and a resume that reads exactly the batches that come next.

Run `python -m snippets.advanced.checkpoints.loader` to print what the page shows.
"""

import tempfile
from pathlib import Path

# --8<-- [start:imports]
import grain

# --8<-- [end:imports]
import jax
import numpy as np
from flax import nnx
from jax import P
from jax.sharding import AxisType, Mesh, NamedSharding
from orbax.checkpoint import v1 as ocp

# On the page, these are defined by earlier blocks.
from snippets.advanced.checkpoints.state import (
    FSDP,
    restore_train_state,
    sharded_train_state,
    state_of,
)
from snippets.models import D_IN, D_OUT, train_step

# --8<-- [start:source]
ROWS, GLOBAL_BATCH = 64, 16  # an epoch is 4 steps of one process


def examples(rows: int, seed: int = 0) -> list[dict]:
    """`rows` examples of a task like the training pages': y = tanh(x @ w) plus noise,
    made with NumPy and held in memory, each with its row number."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(D_IN, D_OUT)) / np.sqrt(D_IN)
    x = rng.normal(size=(rows, D_IN))
    y = np.tanh(x @ w) + 0.01 * rng.normal(size=(rows, D_OUT))
    x, y = x.astype(np.float32), y.astype(np.float32)
    return [{"row": i, "x": x[i], "y": y[i]} for i in range(rows)]


# --8<-- [end:source]


# --8<-- [start:make-loader]
def make_loader(
    source, global_batch: int, shard: grain.sharding.ShardOptions, seed: int = 0
) -> grain.DataLoader:
    """Endless shuffled epochs over this process's share of `source`, in batches of
    its share of `global_batch` rows."""
    local_batch = check_sizes(len(source), global_batch, shard.shard_count)
    sampler = grain.samplers.IndexSampler(
        len(source),
        shard_options=shard,  # (1)!
        shuffle=True,  # (2)!
        seed=seed,
        num_epochs=None,
    )
    return grain.DataLoader(
        data_source=source,
        sampler=sampler,
        operations=[grain.transforms.Batch(local_batch, drop_remainder=True)],
        worker_count=0,  # (3)!
    )


def check_sizes(rows: int, global_batch: int, processes: int) -> int:
    """This process's rows per batch, or a ValueError that says what to change."""
    if rows % processes:
        raise ValueError(
            f"{rows} rows do not split evenly over {processes} processes: their shares "
            f"would differ in size, or {rows % processes} row(s) would never be read. "
            f"Use a number of rows that {processes} divides, or another process count."
        )
    if global_batch % processes:
        raise ValueError(
            f"a global batch of {global_batch} rows does not split over {processes} "
            f"processes: use a multiple of {processes}."
        )
    local_batch, per_process = global_batch // processes, rows // processes
    if per_process % local_batch:
        raise ValueError(
            f"each process reads {per_process} rows per epoch, which batches of "
            f"{local_batch} do not divide: a batch would join the end of one epoch to "
            "the start of the next, and could hold a row twice. Use a global batch of "
            f"{processes} x a divisor of {per_process}."
        )
    return local_batch


# --8<-- [end:make-loader]


# --8<-- [start:train-on]
@nnx.jit
def noisy_step(model, optimizer, x, y, key):
    """train_step on inputs with a little noise drawn from `key`, as dropout would
    draw its mask. Returns the loss and the key for the next step."""
    key, noise_key = jax.random.split(key)
    noisy_x = x + 0.1 * jax.random.normal(noise_key, x.shape)
    return train_step(model, optimizer, noisy_x, y), key


def train_on(model, optimizer, data, key, steps: int, sharding: NamedSharding):
    """`steps` steps on the next batches of the loader iterator `data`. Returns the
    losses, the rows each step read, and the key for the step after."""
    losses, rows = [], []
    for _ in range(steps):
        batch = next(data)
        x, y = (
            jax.make_array_from_process_local_data(sharding, batch[name])  # (1)!
            for name in ("x", "y")
        )
        loss, key = noisy_step(model, optimizer, x, y, key)
        losses.append(float(loss))
        rows.append(batch["row"].tolist())
    return losses, rows, key


# --8<-- [end:train-on]


# --8<-- [start:save-load]
def save_checkpoint(path: Path, model, optimizer, key, data) -> None:
    """The train state, the random key and the loader's position, in one checkpoint."""
    ocp.save_checkpointables(
        path,
        {"state": state_of(model, optimizer), "rng": key, "data": data},  # (1)!
    )


def load_checkpoint(path: Path, mesh: Mesh, specs: dict, data):
    """The model, optimizer and key saved at `path`; `data`, a fresh iterator of the
    same loader, is moved to the saved position."""
    saved = {part.name for part in path.iterdir() if part.is_dir()}  # (2)!
    if missing := sorted({"state", "rng", "data"} - saved):
        raise ValueError(
            f"the checkpoint {path.name!r} has no {missing} (it holds {sorted(saved)}): "
            "resuming from it would read other batches or draw other random numbers "
            "than the run that saved it. Save it with save_checkpoint, which writes "
            "the loader's position and the key beside the state."
        )
    model, optimizer = restore_train_state(path, mesh, specs)  # (3)!
    key = jax.ShapeDtypeStruct(
        (), jax.random.key(0).dtype, sharding=NamedSharding(mesh, P())
    )
    loaded = ocp.load_checkpointables(path, {"rng": key, "data": data})  # (4)!
    return model, optimizer, loaded["rng"], loaded["data"]


# --8<-- [end:save-load]


def resume_exactly(data_mesh: Mesh, directory: Path):
    # --8<-- [start:resume]
    source = examples(ROWS)
    split_batch = NamedSharding(data_mesh, P("data"))
    shard = grain.sharding.ShardByJaxProcess()  # (1)!
    checkpoint = directory / "with-data"

    model, optimizer = sharded_train_state(data_mesh, FSDP)
    data = iter(make_loader(source, GLOBAL_BATCH, shard))
    key = jax.device_put(jax.random.key(1), NamedSharding(data_mesh, P()))  # (2)!
    _, _, key = train_on(model, optimizer, data, key, 3, split_batch)
    save_checkpoint(checkpoint, model, optimizer, key, data)
    kept_on, kept_rows, _ = train_on(model, optimizer, data, key, 3, split_batch)

    fresh = iter(make_loader(source, GLOBAL_BATCH, shard))  # (3)!
    model2, optimizer2, key2, data2 = load_checkpoint(
        checkpoint, data_mesh, FSDP, fresh
    )
    resumed, resumed_rows, _ = train_on(model2, optimizer2, data2, key2, 3, split_batch)
    print("parts:", sorted(part.name for part in checkpoint.iterdir() if part.is_dir()))
    print("data/ holds:", sorted(file.name for file in (checkpoint / "data").iterdir()))
    print("rows of steps 3, 4, 5 after resuming, the first four of each:")
    print("   ", [rows[:4] for rows in resumed_rows])
    print("the same rows as the run that kept on:", resumed_rows == kept_rows)
    print("the same losses, bitwise:", resumed == kept_on)
    # --8<-- [end:resume]
    return kept_on, kept_rows, resumed, resumed_rows


# --8<-- [start:rows-by-process]
def rows_by_process(source, global_batch: int, processes: int) -> list[list[int]]:
    """The rows each of `processes` processes reads in its first epoch, with the
    shard options ShardByJaxProcess would give process 0, 1, ... of that run."""
    read = []
    for index in range(processes):
        shard = grain.sharding.ShardOptions(index, processes)
        loader = iter(make_loader(source, global_batch, shard))
        per_epoch = len(source) // global_batch  # every process, the same count
        read.append(
            [row for _ in range(per_epoch) for row in next(loader)["row"].tolist()]
        )
    return read


# --8<-- [end:rows-by-process]


def show_shards() -> list[list[int]]:
    # --8<-- [start:show-shards]
    processes = 2
    read = rows_by_process(examples(ROWS), GLOBAL_BATCH, processes)
    for index, rows in enumerate(read):
        print(f"process {index} of {processes} reads rows {min(rows)}..{max(rows)}:")
        print("   ", rows[: GLOBAL_BATCH // processes], "...")
    everything = sorted(row for rows in read for row in rows)
    print("every row read once, by one process:", everything == list(range(ROWS)))
    # --8<-- [end:show-shards]
    return read


def bad_input(data_mesh: Mesh, directory: Path) -> None:
    # --8<-- [start:bad-input]
    source = examples(ROWS)
    for global_batch, processes in [(16, 3), (18, 4), (24, 2)]:
        try:
            make_loader(source, global_batch, grain.sharding.ShardOptions(0, processes))
        except ValueError as err:
            print(f"ValueError: {err}")
    try:
        fresh = iter(make_loader(source, GLOBAL_BATCH, grain.sharding.NoSharding()))
        load_checkpoint(directory / "fsdp", data_mesh, FSDP, fresh)  # (1)!
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:bad-input]


def main() -> None:
    data_mesh = jax.make_mesh((8,), ("data",), axis_types=(AxisType.Auto,))
    with tempfile.TemporaryDirectory() as directory:
        ocp.save(
            Path(directory) / "fsdp", state_of(*sharded_train_state(data_mesh, FSDP))
        )
        resume_exactly(data_mesh, Path(directory))
        show_shards()
        bad_input(data_mesh, Path(directory))


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
