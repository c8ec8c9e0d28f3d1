"""One process of a multi-process data-parallel run: the program every process runs.

    python -m snippets.training.multi_host.worker --process-id 0 --port 12355 --out result-0.npz

Started once per process (by `snippets.training.multi_host.launch`, or by hand in two terminals),
each with 4 CPU devices; together they train on the global mesh of 8. The page also calls
`train` in its own single process of 8 devices, where the same code runs unchanged.
Unlike the other snippet modules, running it does not ask for 8 local devices: it starts
JAX's distributed runtime instead.
"""

# --8<-- [start:imports]
import argparse

import jax
import numpy as np
import optax
from flax import nnx
from jax import P
from jax.sharding import AxisType, NamedSharding

# --8<-- [end:imports]
# On the page, these are defined by earlier blocks.
from snippets.models import D_HIDDEN, D_IN, D_OUT, MLP, batches, train_step


# --8<-- [start:start-process]
def start_process(process_id: int, num_processes: int, port: int) -> None:
    """Join the run: must come before any other JAX call in the process."""
    jax.config.update("jax_platforms", "cpu")
    jax.config.update("jax_num_cpu_devices", 4)  # this process's devices
    jax.config.update("jax_cpu_collectives_implementation", "gloo")  # (1)!
    jax.distributed.initialize(
        coordinator_address=f"127.0.0.1:{port}",  # (2)!
        num_processes=num_processes,
        process_id=process_id,
    )


# --8<-- [end:start-process]


# --8<-- [start:my-rows]
def data_mesh():
    """One axis, "data", over every device of every process."""
    return jax.make_mesh(
        (jax.device_count(),), ("data",), axis_types=(AxisType.Explicit,)
    )  # (1)!


def my_rows(mesh, batch: int) -> slice:
    """The rows of a global batch of `batch` rows that this process's devices hold,
    split over mesh axis "data"."""
    n = mesh.size
    if batch % n:
        raise ValueError(
            f"a batch of {batch} rows cannot be split over the {n} devices of "
            f"mesh axis 'data': use a batch that is a multiple of {n}."
        )
    sharding = NamedSharding(mesh, P("data"))
    # Where a process's devices sit along "data" is the mesh's choice, not a rule of
    # process_index: ask the sharding.
    held = sharding.addressable_devices_indices_map((batch,)).values()
    mine = slice(min(i[0].start for i in held), max(i[0].stop for i in held))
    if mine.stop - mine.start != batch * len(held) // n:
        raise ValueError(
            "this process's devices hold rows that are not next to each other; "
            "order the mesh's devices by process (jax.make_mesh(..., devices=...))."
        )
    return mine


# --8<-- [end:my-rows]


# --8<-- [start:dataset]
def dataset(steps: int, batch: int, path: str | None = None, rows=slice(None)):
    """This process's `rows` of every batch, as two NumPy arrays (steps, rows,
    features): read from the .npy files in `path`, or made with models.batches."""
    if path is None:  # made whole, the same on every process
        x, y = (np.stack(a) for a in zip(*batches(steps, batch), strict=True))
    else:
        x = np.load(f"{path}/x.npy", mmap_mode="r")  # (1)!
        y = np.load(f"{path}/y.npy", mmap_mode="r")
    return np.array(x[:, rows]), np.array(y[:, rows])  # copies of these rows only


# --8<-- [end:dataset]


# --8<-- [start:global-batch]
def global_batch(mesh, x: np.ndarray, y: np.ndarray, batch: int):
    """One global batch of `batch` rows over mesh axis "data", from this process's
    rows `x` and `y` only."""
    sharding = NamedSharding(mesh, P("data"))
    return tuple(  # (1)!
        jax.make_array_from_process_local_data(sharding, a, (batch, *a.shape[1:]))
        for a in (x, y)
    )


# --8<-- [end:global-batch]


# --8<-- [start:train]
def train(mesh, x: np.ndarray, y: np.ndarray, batch: int, seed: int = 0):
    """Data-parallel training on `mesh`, one step per global batch of `batch` rows,
    of which this process supplies `x` and `y`: (steps, its rows, features).
    Returns the losses and the final weights, by name."""
    model = MLP(D_IN, D_HIDDEN, D_OUT, rngs=nnx.Rngs(seed))  # (1)!
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    everywhere = NamedSharding(mesh, P())

    def replicate(a):  # (2)!
        return jax.make_array_from_process_local_data(everywhere, np.asarray(a))

    state = jax.tree.map(replicate, nnx.state((model, optimizer)))
    nnx.update((model, optimizer), state)
    step = nnx.jit(train_step)
    losses = []
    for x_step, y_step in zip(x, y, strict=True):
        global_x, global_y = global_batch(mesh, x_step, y_step, batch)  # (3)!
        losses.append(float(step(model, optimizer, global_x, global_y)))  # (4)!
    return losses, named_weights(model)


def named_weights(model: nnx.Module) -> dict[str, np.ndarray]:
    """The model's weights as NumPy arrays, by name ("up.kernel", ...)."""
    weights = nnx.state(model, nnx.Param)
    return {
        jax.tree_util.keystr(p[:-1], simple=True, separator="."): np.asarray(v)
        for p, v in jax.tree.leaves_with_path(weights)
    }


# --8<-- [end:train]


# --8<-- [start:main]
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="one process of the run")
    parser.add_argument("--process-id", type=int, required=True)
    parser.add_argument("--num-processes", type=int, default=2)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--out", required=True, help="file for the results")
    parser.add_argument("--data", help="folder of x.npy and y.npy (default: make them)")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args(argv)
    if not 0 <= args.process_id < args.num_processes:
        parser.error(f"--process-id must be in 0..{args.num_processes - 1}")
    start_process(args.process_id, args.num_processes, args.port)
    mesh = data_mesh()
    rows = my_rows(mesh, args.batch)
    x, y = dataset(args.steps, args.batch, args.data, rows)
    losses, weights = train(mesh, x, y, args.batch)
    local = [d.id for d in jax.local_devices()]
    print(
        f"process {jax.process_index()} of {jax.process_count()}:",
        f"devices {local} of {jax.device_count()},",
        f"rows {rows.start}:{rows.stop} of {args.batch}, loaded {x.shape},",
        "losses",
        [round(v, 3) for v in losses],
        flush=True,
    )
    np.savez(args.out, losses=np.asarray(losses), loaded=np.asarray(x.shape), **weights)


# --8<-- [end:main]

if __name__ == "__main__":
    main()
