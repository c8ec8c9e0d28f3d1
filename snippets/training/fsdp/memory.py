"""Bytes per device of parameters and Adam state: replicated data parallelism vs FSDP.

Run `python -m snippets.training.fsdp.memory` to print what the page shows.
"""

import jax
import optax
from flax import nnx
from jax import P
from jax.sharding import Mesh, NamedSharding

# The page shows these by including the sections of snippets/models.py, the tensor
# parallelism page's column_row.py and placement.py.
from snippets.models import D_HIDDEN, D_IN, D_OUT, MLP


def replicated_baseline(mesh: Mesh):
    # --8<-- [start:replicated]
    everywhere = NamedSharding(mesh, P())
    fresh = MLP(D_IN, D_HIDDEN, D_OUT, rngs=nnx.Rngs(0))
    replicated = jax.device_put(fresh, everywhere)  # (1)!
    adam = optax.adam(1e-2)
    replicated_optimizer = nnx.Optimizer(replicated, adam, wrt=nnx.Param)
    # --8<-- [end:replicated]
    return replicated, replicated_optimizer


# --8<-- [start:bytes-table]
def device_bytes(tree) -> int:
    """Bytes that device 0 stores for all the arrays in `tree`."""
    leaves = jax.tree.leaves(tree)
    return sum(leaf.addressable_shards[0].data.nbytes for leaf in leaves)


def print_row(label, numbers) -> None:
    print(f"{label:<12}" + "".join(f"{n:>8}" for n in numbers))


def bytes_per_device(model, optimizer) -> list[int]:
    """Device 0's bytes of parameters, Adam's mu and nu, and their total."""
    adam = optimizer.opt_state[0]
    parts = [nnx.state(model, nnx.Param), adam.mu, adam.nu]
    sizes = [device_bytes(part) for part in parts]
    return [*sizes, sum(sizes)]


# --8<-- [end:bytes-table]


def compare(model, optimizer, replicated, replicated_optimizer, mesh: Mesh):
    # --8<-- [start:compare]
    n = mesh.shape["data"]
    params = 4 * (D_IN * D_HIDDEN + D_HIDDEN + D_HIDDEN * D_OUT + D_OUT)  # (1)!
    measured = {
        "replicated": bytes_per_device(replicated, replicated_optimizer),
        "FSDP": bytes_per_device(model, optimizer),
    }
    formulas = {
        "P": [params, params, params, 3 * params],
        f"P / {n}": [params // n, params // n, params // n, 3 * params // n],
    }
    print_row("", ["params", "mu", "nu", "total"])
    for label, numbers in {**measured, **formulas}.items():
        print_row(label, numbers)
    # --8<-- [end:compare]
    return measured, formulas


def main() -> None:
    from snippets.training.fsdp import placement

    mesh = placement.data_mesh()
    _, model, optimizer = placement.place_fsdp(mesh)
    replicated, replicated_optimizer = replicated_baseline(mesh)
    compare(model, optimizer, replicated, replicated_optimizer, mesh)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
