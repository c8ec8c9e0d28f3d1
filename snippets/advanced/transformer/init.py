"""The 3-axis mesh, and the train state created in place, each array already split.

Run `python -m snippets.advanced.transformer.init` to print what the page shows.
"""

import dataclasses

# --8<-- [start:imports]
import math

import jax
from flax import nnx
from jax.sharding import AxisType, Mesh, NamedSharding

# --8<-- [end:imports]
# The page shows these by including the sections of model.py.
from snippets.advanced.transformer.model import RULES, Config, TrainState, mesh_axes


# --8<-- [start:build-mesh]
def build_mesh(shape=(2, 2, 2), kind=AxisType.Auto) -> Mesh:
    """A (data, fsdp, tensor) mesh of the first prod(shape) devices."""
    if len(shape) != 3 or min(shape) < 1 or math.prod(shape) > jax.device_count():
        raise ValueError(f"Give three sizes >= 1 that fit the devices, not {shape}.")
    devices = jax.devices()[: math.prod(shape)]
    names = ("data", "fsdp", "tensor")
    return jax.make_mesh(shape, names, axis_types=(kind,) * 3, devices=devices)


# --8<-- [end:build-mesh]


def the_mesh() -> Mesh:
    # --8<-- [start:mesh]
    mesh = build_mesh()
    print(mesh)
    # --8<-- [end:mesh]
    return mesh


# --8<-- [start:check-layout]
def check_layout(abstract: nnx.Module, mesh: Mesh, rules=RULES) -> None:
    """Refuse a variable whose names have no rule or whose sizes do not split."""
    for path, node in nnx.iter_graph(abstract):
        meta = node.get_metadata() if isinstance(node, nnx.Variable) else {}
        if names := meta.get("out_sharding"):
            where = ".".join(map(str, path))
            try:
                spec = mesh_axes(names, rules)
                NamedSharding(mesh, spec)  # refuses a mesh axis the mesh lacks
            except ValueError as err:
                raise ValueError(f"{where} {names}: {err}") from None
            for name, size, axes in zip(names, node.shape, spec, strict=True):
                axes = (axes,) if isinstance(axes, str) else axes or ()
                ways = math.prod(mesh.shape[axis] for axis in axes)
                if size % ways:
                    raise ValueError(
                        f"{where} {names}: its {name!r} dimension of {size} does not "
                        f"split {ways} ways over {axes}: make {name!r} a multiple of "
                        f"{ways}, or give it a smaller mesh axis in the rules."
                    )


# --8<-- [end:check-layout]


# --8<-- [start:sharded-init]
@dataclasses.dataclass(frozen=True)
class Sharded:
    graphdef: nnx.GraphDef  # a TrainState without its arrays
    abstract: nnx.State  # its arrays as ShapeDtypeStructs with shardings
    shardings: nnx.State
    init: jax.stages.Wrapped  # creates the state, each array in place


def sharded_init(cfg: Config, mesh: Mesh, rules=RULES, seed: int = 0) -> Sharded:
    def create():
        return TrainState(cfg, rngs=nnx.Rngs(seed))

    with nnx.use_eager_sharding(False):  # (1)!
        abstract = nnx.eval_shape(create)  # (2)!
    check_layout(abstract, mesh, rules)
    graphdef, shapes = nnx.split(abstract)
    with nnx.logical_axis_rules(rules):
        shardings = nnx.get_named_sharding(shapes, mesh)  # (3)!

    @jax.jit(out_shardings=shardings)
    def init():
        with nnx.use_eager_sharding(False):
            return nnx.state(create())

    return Sharded(graphdef, init.eval_shape(), shardings, init)  # (4)!


# --8<-- [end:sharded-init]


# --8<-- [start:print-state]
def print_state(state: nnx.State) -> None:
    """One row per parameter: shape, spec and the block device 0 holds."""
    print(f"{'variable':<24}{'shape':<18}{'spec':<39}per device")
    for path, variable in nnx.to_flat_state(nnx.filter_state(state, nnx.Param)):
        array, name = variable[...], "/".join(map(str, path))
        block = array.addressable_shards[0].data.shape
        print(f"{name:<24}{array.shape!s:<18}{array.sharding.spec!s:<39}{block}")


# --8<-- [end:print-state]


def make_state(mesh: Mesh):
    # --8<-- [start:make-state]
    cfg = Config()
    sharded = sharded_init(cfg, mesh)
    state = sharded.init()
    print_state(state)
    # --8<-- [end:make-state]
    return cfg, sharded, state


def main() -> None:
    mesh = the_mesh()
    make_state(mesh)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
