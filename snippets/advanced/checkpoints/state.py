"""A sharded train state, saved with Orbax and restored onto another mesh with other specs.

Run `python -m snippets.advanced.checkpoints.state` to print what the page shows.
"""

# --8<-- [start:imports]
import math
import tempfile
from pathlib import Path

import jax
import numpy as np
import optax
from flax import nnx
from jax import P
from jax.sharding import AxisType, Mesh, NamedSharding
from orbax.checkpoint import v1 as ocp

# --8<-- [end:imports]
# On the page, these are defined by earlier blocks (the sections of snippets/models.py).
from snippets.models import D_HIDDEN, D_IN, D_OUT, MLP

# --8<-- [start:specs]
FSDP = {  # the FSDP page's rule: split each parameter's largest dimension
    "up.kernel": P(None, "data"),
    "up.bias": P("data"),
    "down.kernel": P("data", None),
    "down.bias": P("data"),
}
TENSOR_PARALLEL = {  # the tensor parallelism page's columns, then rows
    "up.kernel": P(None, "model"),
    "up.bias": P("model"),
    "down.kernel": P("model", None),
    "down.bias": P(),
}
# --8<-- [end:specs]


# --8<-- [start:train-state]
def new_train_state(seed: int = 0) -> tuple[MLP, nnx.Optimizer]:
    """The training pages' MLP and its Adam optimizer, not yet on any mesh."""
    model = MLP(D_IN, D_HIDDEN, D_OUT, rngs=nnx.Rngs(seed))
    return model, nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)


def state_of(model: nnx.Module, optimizer: nnx.Optimizer) -> dict:
    """What a checkpoint holds: every array of the model and of the optimizer."""
    return {"model": nnx.state(model), "optimizer": nnx.state(optimizer)}


def put_back(model: nnx.Module, optimizer: nnx.Optimizer, state: dict) -> None:
    """The reverse of state_of: make `state`'s arrays those of model and optimizer."""
    nnx.update(model, state["model"])
    nnx.update(optimizer, state["optimizer"])


# --8<-- [end:train-state]


# --8<-- [start:shardings-for]
def array_name(path) -> str:
    """ "model.up.kernel", "optimizer.opt_state.0.mu.up.kernel", ... for a path."""
    name = jax.tree_util.keystr(path, simple=True, separator=".")
    return name.removesuffix(".value")  # (1)!


def shardings_for(state, mesh: Mesh, specs: dict[str, P]):
    """A NamedSharding on `mesh` for every array of `state`: a parameter's spec
    from `specs`, the same for Adam's moments of it, and P() for the rest."""
    used = set()

    def sharding(path, leaf):
        name = array_name(path)
        found = [param for param in specs if name.endswith("." + param)]  # (2)!
        spec = specs[found[0]] if found else P()  # (3)!
        used.update(found)
        check_fits(name, leaf.shape, spec, mesh)
        return NamedSharding(mesh, spec)

    shardings = jax.tree.map_with_path(sharding, state)
    if unknown := sorted(specs.keys() - used):
        raise ValueError(
            f"specs name {unknown}, but no array of the state is called that: "
            "name the parameters as the model does ('up.kernel', ...)."
        )
    return shardings


def check_fits(name: str, shape: tuple, spec: P, mesh: Mesh) -> None:
    """Raise a ValueError that says what to change if `spec` cannot lay out an
    array of `shape` on `mesh`."""
    if len(spec) > len(shape):
        raise ValueError(
            f"{spec} has {len(spec)} entries but {name} has shape {shape}: "
            f"give it at most {len(shape)}, one per dimension."
        )
    for dim, axes in enumerate(spec):
        axes = (axes,) if isinstance(axes, str) else (axes or ())
        if missing := [axis for axis in axes if axis not in mesh.axis_names]:
            raise ValueError(
                f"{spec} for {name} names mesh axis {missing[0]!r}, but the mesh "
                f"has axes {mesh.axis_names}: use one of those."
            )
        ways = math.prod(mesh.shape[axis] for axis in axes)
        if shape[dim] % ways:
            raise ValueError(
                f"{name} has shape {shape}: its dimension {dim} ({shape[dim]}) "
                f"does not split evenly over {ways} devices ({spec}). Split a "
                f"dimension that {ways} divides, or use fewer devices on that axis."
            )


# --8<-- [end:shardings-for]


# --8<-- [start:sharded-train-state]
def sharded_train_state(mesh: Mesh, specs: dict[str, P], seed: int = 0):
    """A fresh model and optimizer, every array placed on `mesh` by `specs`."""
    model, optimizer = new_train_state(seed)
    state = state_of(model, optimizer)
    put_back(model, optimizer, jax.device_put(state, shardings_for(state, mesh, specs)))
    return model, optimizer


def print_state(model: nnx.Module, optimizer: nnx.Optimizer) -> None:
    """One line per array: its shape, spec, one device's block, and on how many
    devices it lives."""
    rows = [("array", "shape", "spec", "per device", "devices")]
    for path, array in jax.tree.leaves_with_path(state_of(model, optimizer)):
        block = array.addressable_shards[0].data.shape
        devices = len(array.sharding.device_set)
        cells = (array_name(path), array.shape, array.sharding.spec, block, devices)
        rows.append(tuple(map(str, cells)))
    widths = [max(map(len, column)) for column in zip(*rows, strict=True)]
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


# --8<-- [end:sharded-train-state]


# --8<-- [start:show-files]
def show_files(checkpoint: Path) -> None:
    """Every file of a checkpoint; the data files, whose names are random, are
    counted per folder."""
    for folder in sorted({p.parent for p in checkpoint.rglob("*") if p.is_file()}):
        files = sorted(p for p in folder.iterdir() if p.is_file())
        where = folder.relative_to(checkpoint)
        if folder.name == "d":
            print(f"{where}/".ljust(28), f"{len(files)} data file(s)")
        else:
            for file in files:
                print(file.relative_to(checkpoint))


# --8<-- [end:show-files]


# --8<-- [start:show-stored]
def show_stored(checkpoint: Path, part: str) -> None:
    """The arrays of one part of a checkpoint as stored: shape, dtype, and the
    chunks they were written in."""
    stored = ocp.metadata(checkpoint).metadata[part]  # (1)!
    print(f"{'array':<20}{'shape':<11}{'dtype':<9}chunks of")
    for path, array in jax.tree.leaves_with_path(stored):
        name = f"{part}.{array_name(path)}"
        chunks = array.storage_metadata.chunk_shape
        print(f"{name:<20}{array.shape!s:<11}{array.dtype!s:<9}{chunks}")


# --8<-- [end:show-stored]


# --8<-- [start:restore]
def restore_train_state(path: Path, mesh: Mesh, specs: dict[str, P]):
    """The train state saved at `path`, read straight onto `mesh` by `specs`."""
    model, optimizer = nnx.eval_shape(new_train_state)  # (1)!
    state = state_of(model, optimizer)
    target = jax.tree.map(
        lambda leaf, sharding: jax.ShapeDtypeStruct(
            leaf.shape, leaf.dtype, sharding=sharding
        ),
        state,
        shardings_for(state, mesh, specs),
    )  # (2)!
    put_back(model, optimizer, ocp.load(path, target))  # (3)!
    return model, optimizer


# --8<-- [end:restore]


def fsdp_state() -> tuple[Mesh, MLP, nnx.Optimizer]:
    # --8<-- [start:place-fsdp]
    data_mesh = jax.make_mesh((8,), ("data",), axis_types=(AxisType.Auto,))
    model, optimizer = sharded_train_state(data_mesh, FSDP)
    print_state(model, optimizer)
    # --8<-- [end:place-fsdp]
    return data_mesh, model, optimizer


def save_fsdp(model: MLP, optimizer: nnx.Optimizer):
    # --8<-- [start:save]
    workdir = tempfile.TemporaryDirectory()  # (1)!
    directory = Path(workdir.name)
    saved = state_of(model, optimizer)
    ocp.save(directory / "fsdp", saved)  # (2)!
    show_files(directory / "fsdp")
    # --8<-- [end:save]
    return workdir, directory, saved


def stored(directory: Path) -> None:
    # --8<-- [start:stored]
    show_stored(directory / "fsdp", "model")
    # --8<-- [end:stored]


def restore_on_four(directory: Path, saved: dict):
    # --8<-- [start:restore-on-four]
    model_mesh = jax.make_mesh(
        (4,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:4]
    )
    model_tp, optimizer_tp = restore_train_state(
        directory / "fsdp", model_mesh, TENSOR_PARALLEL
    )
    print_state(model_tp, optimizer_tp)
    restored = state_of(model_tp, optimizer_tp)
    same = jax.tree.map(np.array_equal, restored, saved)
    print("every array bitwise equal to the saved one:", all(jax.tree.leaves(same)))
    # --8<-- [end:restore-on-four]
    return model_mesh, model_tp, optimizer_tp


def main() -> None:
    _, model, optimizer = fsdp_state()
    workdir, directory, saved = save_fsdp(model, optimizer)
    with workdir:
        stored(directory)
        restore_on_four(directory, saved)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
