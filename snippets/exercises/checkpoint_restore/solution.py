"""Reference solution of the exercise `checkpoint_restore` (checkpoints across meshes).

Run `python -m snippets.exercises.checkpoint_restore.solution` to see it restore the page's
FSDP checkpoint onto four devices.
"""

# --8<-- [start:imports]
import math
from pathlib import Path

import jax
from jax import P
from jax.sharding import Mesh, NamedSharding
from orbax.checkpoint import v1 as ocp

# --8<-- [end:imports]


# --8<-- [start:solution]
def checkpoint_restore(path: Path, mesh: Mesh, specs: dict[str, P]):
    """The tree saved at `path`, read onto `mesh`: each parameter as `specs` says,
    Adam's moments of it the same, the rest replicated."""
    saved = ocp.metadata(path).metadata  # (1)!
    params = [
        name
        for name in (array_name(p) for p, _ in jax.tree.leaves_with_path(saved))
        if name.startswith("model.")
    ]
    if unknown := sorted(p for p in specs if f"model.{p}" not in params):
        raise ValueError(f"specs name {unknown}; the checkpoint holds {params}.")

    def target(leaf_path, stored):
        name = array_name(leaf_path)
        found = [p for p in specs if name.endswith("." + p)]  # (2)!
        spec = specs[found[0]] if found else P()
        sharding = NamedSharding(mesh, spec)  # checks the axis names
        if not fits(stored.shape, spec, mesh):
            raise ValueError(
                f"{name} {stored.shape} cannot be split as {spec} on a mesh "
                f"{dict(mesh.shape)}: give it a spec whose splits divide its shape."
            )
        return jax.ShapeDtypeStruct(
            stored.shape, stored.dtype, sharding=sharding
        )  # (3)!

    return ocp.load(path, jax.tree.map_with_path(target, saved))  # (4)!


def fits(shape: tuple[int, ...], spec: P, mesh: Mesh) -> bool:
    """Whether every dimension of `shape` splits evenly as `spec` asks."""
    if len(spec) > len(shape):
        return False
    for size, axes in zip(shape, spec, strict=False):  # dimensions past the spec: whole
        axes = (axes,) if isinstance(axes, str) else (axes or ())
        if size % math.prod(mesh.shape[axis] for axis in axes):
            return False
    return True


def array_name(path) -> str:
    """ "model.up.kernel", "optimizer.opt_state.0.mu.up.kernel", ... for a path."""
    name = jax.tree_util.keystr(path, simple=True, separator=".")
    return name.removesuffix(".value")


# --8<-- [end:solution]


def main() -> None:
    import tempfile

    from jax.sharding import AxisType

    from snippets.advanced.checkpoints.state import (
        FSDP,
        TENSOR_PARALLEL,
        sharded_train_state,
        state_of,
    )

    data_mesh = jax.make_mesh((8,), ("data",), axis_types=(AxisType.Explicit,))
    model_mesh = jax.make_mesh(
        (4,), ("model",), axis_types=(AxisType.Explicit,), devices=jax.devices()[:4]
    )
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "fsdp"
        ocp.save(path, state_of(*sharded_train_state(data_mesh, FSDP)))
        restored = checkpoint_restore(path, model_mesh, TENSOR_PARALLEL)
        for leaf_path, array in jax.tree.leaves_with_path(restored):
            print(f"{array_name(leaf_path):<38}{jax.typeof(array)}")


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
