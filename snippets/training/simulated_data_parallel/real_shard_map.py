"""The same forward pass as a real nnx.shard_map over 8 devices.

Run `python -m snippets.training.simulated_data_parallel.real_shard_map` to print what the page shows.
"""

# On the page, these three come from the imports at the top, and the last two imports from
# earlier blocks.
import jax
import numpy as np
from flax import nnx

# --8<-- [start:imports]
from jax import P
from jax.sharding import AxisType, NamedSharding

# --8<-- [end:imports]
# isort: split
from snippets.hlo import print_collectives
from snippets.training.simulated_data_parallel.simulate import shard_map_simulate

Mesh = jax.sharding.Mesh  # for the type hints; the page's code does not use it


def build_mesh() -> Mesh:
    # --8<-- [start:mesh]
    mesh = jax.make_mesh((8,), ("data",), axis_types=(AxisType.Explicit,))
    print(mesh)
    # --8<-- [end:mesh]
    return mesh


def sharded_forward(mesh: Mesh, model: nnx.Linear, x: jax.Array) -> tuple:
    # --8<-- [start:shard-map]
    def forward(model, x_local):
        print("each device runs forward on", jax.typeof(x_local))  # (1)!
        return model(x_local)

    data_parallel = nnx.shard_map(
        forward,
        mesh=mesh,
        in_specs=(P(), P("data")),  # (2)!
        out_specs=P("data"),  # (3)!
    )
    x_placed = jax.device_put(x, NamedSharding(mesh, P("data")))  # (4)!
    out = data_parallel(model, x_placed)
    print("the caller gets", jax.typeof(out))
    # --8<-- [end:shard-map]
    return data_parallel, x_placed, out


def compare(
    out: jax.Array, x: jax.Array, model: nnx.Linear, expected: jax.Array
) -> None:
    # --8<-- [start:compare]
    simulated = shard_map_simulate(0, x, 8, 3)
    for name, other in [("the simulation", simulated), ("model(x)", expected)]:
        gap = np.max(np.abs(out.reshape(-1) - other))
        print(f"shard_map vs {name}: within {1e-6:g}: {gap <= 1e-6}")
    # --8<-- [end:compare]


def collectives(data_parallel, model: nnx.Linear, x_placed: jax.Array):
    # --8<-- [start:collectives]
    compiled = nnx.jit(data_parallel).lower(model, x_placed).compile()
    print_collectives(compiled)
    # --8<-- [end:collectives]
    return compiled


def main() -> None:
    from snippets.training.simulated_data_parallel import simulate

    x, model, expected = simulate.run_simulation()
    mesh = build_mesh()
    data_parallel, x_placed, out = sharded_forward(mesh, model, x)
    compare(out, x, model, expected)
    collectives(data_parallel, model, x_placed)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
