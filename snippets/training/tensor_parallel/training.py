"""Training the column-then-row MLP: the compiled step's collectives, and the reference run.

Run `python -m snippets.training.tensor_parallel.training` to print what the page shows.
"""

# --8<-- [start:imports]
import jax
import jax.numpy as jnp
import optax
from flax import nnx
from jax import P
from jax.sharding import Mesh, NamedSharding

# --8<-- [end:imports]
# The page shows these by including the sections of snippets/models.py and hlo.py.
from snippets.hlo import print_collectives
from snippets.models import MLP, batches, train_reference, train_step
from snippets.training.tensor_parallel.column_row import model_mesh, place_mlp


def compile_step(model: MLP, mesh: Mesh):
    # --8<-- [start:step]
    def step(model, optimizer, x, y):  # (1)!
        loss = train_step(model, optimizer, x, y)
        return loss, model, optimizer

    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    data = jax.device_put(batches(5, 64), NamedSharding(mesh, P()))  # (2)!
    x, y = data[0]
    compiled_step = jax.jit(step).lower(model, optimizer, x, y).compile()
    print_collectives(compiled_step)
    # --8<-- [end:step]
    return optimizer, data, compiled_step


def train_and_compare(model: MLP, optimizer: nnx.Optimizer, data, compiled_step):
    # --8<-- [start:train]
    losses = []
    for x, y in data:
        loss, model, optimizer = compiled_step(model, optimizer, x, y)  # (1)!
        losses.append(float(loss))

    reference_losses, reference = train_reference(steps=5, batch=64)
    print("step  one device  tensor parallel")
    for i, (a, b) in enumerate(zip(reference_losses, losses, strict=True)):
        print(f"{i:>4}  {a:>10.3f}  {b:>15.3f}")
    gaps = jax.tree.map(
        lambda a, b: float(jnp.max(jnp.abs(a - b))),
        nnx.state(model, nnx.Param),
        nnx.state(reference, nnx.Param),
    )
    worst = max(jax.tree.leaves(gaps))
    print(f"parameters within {1e-5:g} of one device: {worst <= 1e-5}")
    print("up.kernel still split:", model.up.kernel[...].sharding.spec)
    # --8<-- [end:train]
    return losses, reference_losses, model, reference


def main_steps(model: MLP, mesh: Mesh) -> None:
    optimizer, data, compiled_step = compile_step(model, mesh)
    train_and_compare(model, optimizer, data, compiled_step)


def main() -> None:
    mesh = model_mesh()
    _, model = place_mlp(mesh)
    main_steps(model, mesh)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
