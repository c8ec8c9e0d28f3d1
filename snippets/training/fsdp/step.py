"""The FSDP training step: gather the parameters for use, reduce the gradients, train.

Run `python -m snippets.training.fsdp.step` to print what the page shows.
"""

import jax
import jax.numpy as jnp
from flax import nnx
from jax import P
from jax.sharding import Mesh, NamedSharding

# The page shows these by including the sections of snippets/models.py, hlo.py, and
# of the 2-D page's placement.py.
from snippets.hlo import print_collectives
from snippets.models import MLP, batches, loss_fn, train_reference, train_step
from snippets.training.two_d.placement import shard_batch


def sharded_data(mesh: Mesh) -> list:
    # --8<-- [start:data]
    data = [shard_batch(x, y, mesh) for x, y in batches(5, 64)]
    x = data[0][0]
    print("x:", x.shape, x.sharding.spec)
    print("per device:", x.addressable_shards[0].data.shape)
    # --8<-- [end:data]
    return data


def left_to_the_compiler(model: MLP, optimizer: nnx.Optimizer, data: list):
    # --8<-- [start:naive]
    def step(model, optimizer, x, y):
        loss = train_step(model, optimizer, x, y)
        return loss, model, optimizer

    naive = jax.jit(step).lower(model, optimizer, *data[0]).compile()
    print_collectives(naive)
    print()
    print_collectives(naive, per_collective=True)
    # --8<-- [end:naive]
    return naive


def fsdp_step_for(mesh: Mesh):
    # --8<-- [start:fsdp-step]
    everywhere = NamedSharding(mesh, P())

    def gathered(model):
        """The model with every parameter all-gathered, whole on every device."""
        return jax.tree.map(  # (1)!
            lambda p: jax.lax.with_sharding_constraint(p, everywhere), model
        )

    def fsdp_loss(model, x, y):
        return loss_fn(gathered(model), x, y)

    def fsdp_step(model, optimizer, x, y):
        loss, grads = nnx.value_and_grad(fsdp_loss)(model, x, y)  # (2)!
        optimizer.update(model, grads)
        return loss, model, optimizer

    # --8<-- [end:fsdp-step]
    return fsdp_step


def compile_fsdp(fsdp_step, model: MLP, optimizer: nnx.Optimizer, data: list):
    # --8<-- [start:compile]
    compiled = jax.jit(fsdp_step).lower(model, optimizer, *data[0]).compile()
    print_collectives(compiled)
    print()
    print_collectives(compiled, per_collective=True)
    # --8<-- [end:compile]
    return compiled


def data_parallel_for_comparison(replicated, replicated_optimizer, data: list):
    # --8<-- [start:replicated-step]
    def step(model, optimizer, x, y):
        loss = train_step(model, optimizer, x, y)
        return loss, model, optimizer

    args = (replicated, replicated_optimizer, *data[0])
    data_parallel = jax.jit(step).lower(*args).compile()
    print_collectives(data_parallel, per_collective=True)
    # --8<-- [end:replicated-step]
    return data_parallel


def memory_during_step(compiled, data_parallel) -> dict[str, tuple[int, int]]:
    # --8<-- [start:memory-during-step]
    memory = {}
    print(f"Bytes per device, {jax.default_backend()} backend")
    for name, program in [("FSDP", compiled), ("data parallel", data_parallel)]:
        report = program.memory_analysis()  # per device
        memory[name] = (report.argument_size_in_bytes, report.temp_size_in_bytes)
        print(
            f"{name:<14} arguments {memory[name][0]:>7,}  temporary {memory[name][1]:>7,}"
        )
    # --8<-- [end:memory-during-step]
    return memory


def train_and_compare(model: MLP, optimizer: nnx.Optimizer, data: list, compiled):
    # --8<-- [start:train]
    losses = []
    for x, y in data:
        loss, model, optimizer = compiled(model, optimizer, x, y)
        losses.append(float(loss))

    reference_losses, reference = train_reference(steps=5, batch=64)
    print("step  one device   FSDP")
    for i, (a, b) in enumerate(zip(reference_losses, losses, strict=True)):
        print(f"{i:>4}  {a:>10.3f}  {b:>5.3f}")
    gaps = jax.tree.map(
        lambda a, b: float(jnp.max(jnp.abs(a - b))),
        nnx.state(model, nnx.Param),
        nnx.state(reference, nnx.Param),
    )
    worst = max(jax.tree.leaves(gaps))
    print(f"parameters within {1e-5:g} of one device: {worst <= 1e-5}")
    mu = optimizer.opt_state[0].mu["up"]["kernel"][...]
    print("up.kernel:", model.up.kernel[...].sharding.spec)
    print("its mu:   ", mu.sharding.spec)
    # --8<-- [end:train]
    return losses, reference_losses, model, optimizer, reference


def batch_of_sixty(mesh: Mesh) -> None:
    # --8<-- [start:bad-batch]
    x, y = batches(1, 60)[0]
    try:
        shard_batch(x, y, mesh)
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:bad-batch]


def batch_of_sixty_trimmed(mesh: Mesh):
    # --8<-- [start:bad-batch-fixed]
    x, y = batches(1, 60)[0]
    keep = x.shape[0] // 8 * 8  # 56: drop the 4 examples that do not fit
    x56, y56 = shard_batch(x[:keep], y[:keep], mesh)
    print("per device:", x56.addressable_shards[0].data.shape)
    # --8<-- [end:bad-batch-fixed]
    return x56, y56


def main() -> None:
    from snippets.training.fsdp import placement

    mesh = placement.data_mesh()
    _, model, optimizer = placement.place_fsdp(mesh)
    data = sharded_data(mesh)
    left_to_the_compiler(model, optimizer, data)
    fsdp_step = fsdp_step_for(mesh)
    compiled = compile_fsdp(fsdp_step, model, optimizer, data)
    from snippets.training.fsdp import memory

    data_parallel = data_parallel_for_comparison(
        *memory.replicated_baseline(mesh), data
    )
    memory_during_step(compiled, data_parallel)
    train_and_compare(model, optimizer, data, compiled)
    batch_of_sixty(mesh)
    batch_of_sixty_trimmed(mesh)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
