"""Every mesh shape trains the same model; sizes that do not divide are refused.

Run `python -m snippets.training.two_d.training` to print what the page shows.
"""

import jax
import jax.numpy as jnp
from flax import nnx

# The page shows these by including the sections of snippets/models.py, the tensor
# parallelism page's column_row.py, placement.py and communication.py.
from snippets.models import D_IN, D_OUT, MLP, batches, train_reference
from snippets.training.tensor_parallel.column_row import print_params, shard_params
from snippets.training.two_d.placement import shard_batch, two_d_mesh


# --8<-- [start:largest-gap]
def largest_gap(a, b) -> float:
    """Largest absolute difference between matching leaves of two pytrees."""
    gaps = jax.tree.map(lambda u, v: float(jnp.max(jnp.abs(u - v))), a, b)
    return max(jax.tree.leaves(gaps))


# --8<-- [end:largest-gap]


def train_every_shape(runs: dict) -> dict:
    # --8<-- [start:train-all]
    reference_losses, reference = train_reference(steps=5, batch=64)
    expected = nnx.state(reference, nnx.Param)
    print(f"mesh   final loss  losses within {1e-6:g}  parameters within {1e-5:g}")
    results = {}
    for (n_data, n_model), (model, optimizer, data, compiled) in runs.items():
        losses = []
        for x, y in data:
            loss, model, optimizer = compiled(model, optimizer, x, y)
            losses.append(float(loss))
        loss_gap = largest_gap(losses, reference_losses)
        param_gap = largest_gap(nnx.state(model, nnx.Param), expected)
        print(
            f"{n_data} x {n_model}  {losses[-1]:>10.3f}  {loss_gap <= 1e-6!s:>19}"
            f"  {param_gap <= 1e-5!s:>22}"
        )
        results[(n_data, n_model)] = losses, model
    print(f"one device  {reference_losses[-1]:.3f}")
    # --8<-- [end:train-all]
    return reference_losses, reference, results


def mesh_of_six() -> None:
    # --8<-- [start:bad-mesh]
    try:
        two_d_mesh((3, 2))
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:bad-mesh]


def batch_of_sixty() -> None:
    # --8<-- [start:bad-batch]
    x, y = batches(1, 60)[0]
    try:
        shard_batch(x, y, two_d_mesh((8, 1)))
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:bad-batch]


def hidden_of_hundred(column_row: dict) -> None:
    # --8<-- [start:bad-hidden]
    odd = nnx.eval_shape(lambda: MLP(D_IN, 100, D_OUT, rngs=nnx.Rngs(0)))
    try:
        shard_params(odd, two_d_mesh((1, 8)), column_row)
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:bad-hidden]


def both_fit_4x2(column_row: dict):
    # --8<-- [start:fits-4x2]
    mesh = two_d_mesh((4, 2))
    odd = MLP(D_IN, 100, D_OUT, rngs=nnx.Rngs(0))
    shard_params(odd, mesh, column_row)  # 100 = 2 x 50
    x, y = shard_batch(*batches(1, 60)[0], mesh)  # 60 = 4 x 15
    print_params(odd)
    print("\nx per device:", x.addressable_shards[0].data.shape)
    # --8<-- [end:fits-4x2]
    return odd, x, y


def main() -> None:
    from snippets.training.two_d import communication, placement

    meshes = placement.build_meshes()
    column_row, *_ = placement.place_on_2x4(meshes)
    runs = communication.prepare_all(column_row, meshes)
    train_every_shape(runs)
    mesh_of_six()
    batch_of_sixty()
    hidden_of_hundred(column_row)
    both_fit_4x2(column_row)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
