"""Reference solution of the exercise `fsdp_shard` (practises FSDP).

Run `python -m snippets.exercises.fsdp_shard.solution` to see it on the MLP.
"""

# --8<-- [start:imports]
import jax
from flax import nnx
from jax import P
from jax.sharding import Mesh, NamedSharding

# --8<-- [end:imports]


# --8<-- [start:solution]
def fsdp_shard(model: nnx.Module, mesh: Mesh) -> nnx.Module:
    """Split every parameter of `model` over mesh axis "data", along its largest
    dimension that "data" divides evenly; in place, and return the model."""
    n = mesh.shape["data"]
    for _, param in nnx.iter_graph(model):  # (1)!
        if not isinstance(param, nnx.Param):
            continue
        shape = param.shape
        divisible = [d for d, size in enumerate(shape) if size % n == 0]
        if divisible:
            dim = max(divisible, key=lambda d: shape[d])  # (2)!
            spec = P(*[None] * dim, "data")  # (3)!
        else:
            spec = P()  # (4)!
        param.set_value(jax.device_put(param[...], NamedSharding(mesh, spec)))
    return model


# --8<-- [end:solution]


def main() -> None:
    from jax.sharding import AxisType

    from snippets.models import D_HIDDEN, D_IN, D_OUT, MLP

    mesh = jax.make_mesh((8,), ("data",), axis_types=(AxisType.Explicit,))
    model = fsdp_shard(MLP(D_IN, D_HIDDEN, D_OUT, rngs=nnx.Rngs(0)), mesh)
    for path, param in nnx.iter_graph(model):
        if isinstance(param, nnx.Param):
            print(".".join(map(str, path)), jax.typeof(param[...]))


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
