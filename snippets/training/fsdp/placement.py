"""Every parameter split over "data" by one rule, and the Adam state that follows it.

Run `python -m snippets.training.fsdp.placement` to print what the page shows.
"""

# --8<-- [start:imports]
import jax
import optax
from flax import nnx
from jax import P
from jax.sharding import AxisType, Mesh, NamedSharding

# --8<-- [end:imports]
# The page shows these by including the sections of snippets/models.py and of the
# tensor parallelism page's column_row.py.
from snippets.models import D_HIDDEN, D_IN, D_OUT, MLP
from snippets.training.tensor_parallel.column_row import print_params


def data_mesh() -> Mesh:
    # --8<-- [start:mesh]
    mesh = jax.make_mesh((8,), ("data",), axis_types=(AxisType.Auto,))
    # --8<-- [end:mesh]
    return mesh


# --8<-- [start:shard-fsdp]
def shard_fsdp(model: nnx.Module, mesh: Mesh) -> dict[str, P]:
    """Split each parameter's largest dimension that "data" divides."""
    n = mesh.shape["data"]
    specs = {}
    for path, param in nnx.iter_graph(model):
        if isinstance(param, nnx.Param):
            shape = param.shape
            divisible = [d for d, size in enumerate(shape) if size % n == 0]
            if divisible:
                dim = max(divisible, key=lambda d: shape[d])
                spec = P(*[None] * dim, "data")
            else:
                spec = P()  # (1)!
            sharding = NamedSharding(mesh, spec)
            param.set_value(jax.device_put(param[...], sharding))
            specs[".".join(map(str, path))] = spec
    return specs


# --8<-- [end:shard-fsdp]


def place_fsdp(mesh: Mesh) -> tuple[dict[str, P], MLP, nnx.Optimizer]:
    # --8<-- [start:place]
    model = MLP(D_IN, D_HIDDEN, D_OUT, rngs=nnx.Rngs(0))
    specs = shard_fsdp(model, mesh)
    print_params(model)
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    # --8<-- [end:place]
    return specs, model, optimizer


def adam_state(optimizer: nnx.Optimizer) -> None:
    # --8<-- [start:adam-state]
    adam = optimizer.opt_state[0]  # (1)!
    for moment in ("mu", "nu"):
        for name in ("up.kernel", "down.kernel"):
            layer, param = name.split(".")
            array = getattr(adam, moment)[layer][param][...]
            shard = array.addressable_shards[0].data.shape
            print(f"{moment} {name:<12}{array.sharding.spec!s:<20}{shard}")
    # --8<-- [end:adam-state]


def main() -> None:
    mesh = data_mesh()
    _, _, optimizer = place_fsdp(mesh)
    adam_state(optimizer)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
