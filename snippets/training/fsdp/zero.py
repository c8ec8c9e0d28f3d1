"""ZeRO-1 and ZeRO-2: only Adam's moments split over "data", the parameters whole.

Run `python -m snippets.training.fsdp.zero` to print what the page shows.
"""

import jax
import jax.numpy as jnp
import optax
from flax import nnx
from jax import P
from jax.sharding import Mesh, NamedSharding

# The page shows these by including the sections of snippets/models.py, hlo.py and of
# this page's memory.py.
from snippets.hlo import print_collectives, read_collectives
from snippets.models import D_HIDDEN, D_IN, D_OUT, MLP, loss_fn, train_step
from snippets.training.fsdp.memory import bytes_per_device, print_row


# --8<-- [start:shard-moments]
def shard_moments(optimizer, specs: dict[str, P], mesh: Mesh, axis: str = "data"):
    """Place Adam's mu and nu by `specs` (a parameter's name: its spec); keep every
    other optimizer array, the step counts, whole on every device."""
    if axis not in mesh.shape:
        raise ValueError(
            f"The mesh has no axis {axis!r}: name one of {tuple(mesh.shape)}."
        )
    n = mesh.shape[axis]
    for path, variable in nnx.iter_graph(optimizer):
        if not isinstance(variable, nnx.Variable):
            continue
        moment = next((m for m in ("mu", "nu") if m in path), None)
        name = ".".join(map(str, path[path.index(moment) + 1 :])) if moment else ""
        spec = specs[name] if moment else P()
        for dim, axes in enumerate(spec):
            if axes == axis and variable.shape[dim] % n:
                raise ValueError(
                    f"{moment} of {name}: dimension {dim} has size "
                    f"{variable.shape[dim]}, which the {n} devices of {axis!r} do not "
                    f"divide: split a dimension that {n} divides, or keep it whole "
                    "with P()."
                )
        variable.set_value(jax.device_put(variable[...], NamedSharding(mesh, spec)))


# --8<-- [end:shard-moments]


def place_zero(specs, mesh, replicated, replicated_optimizer, model, optimizer):
    # --8<-- [start:zero-place]
    everywhere = NamedSharding(mesh, P())
    zero_model = jax.device_put(
        MLP(D_IN, D_HIDDEN, D_OUT, rngs=nnx.Rngs(0)), everywhere
    )
    zero_optimizer = nnx.Optimizer(zero_model, optax.adam(1e-2), wrt=nnx.Param)
    shard_moments(zero_optimizer, specs, mesh)  # (1)!

    print_row("", ["params", "mu", "nu", "total"])
    print_row("replicated", bytes_per_device(replicated, replicated_optimizer))
    print_row("ZeRO-1", bytes_per_device(zero_model, zero_optimizer))
    print_row("FSDP", bytes_per_device(model, optimizer))
    # --8<-- [end:zero-place]
    return zero_model, zero_optimizer


def compile_zero1(step, zero_model, zero_optimizer, data, mesh):
    # --8<-- [start:zero1-step]
    everywhere = NamedSharding(mesh, P())
    layouts = jax.tree.map(lambda a: a.sharding, (zero_model, zero_optimizer))
    args = (zero_model, zero_optimizer, *data[0])
    zero1 = jax.jit(step, out_shardings=(everywhere, *layouts)).lower(*args).compile()
    print_collectives(zero1, per_collective=True)

    loose = jax.jit(step).lower(*args).compile()  # (1)!
    print()
    print("without out_shardings:")
    print_collectives(loose)
    print("up.kernel comes back", loose.output_shardings[1].up.kernel.get_value().spec)
    # --8<-- [end:zero1-step]
    return zero1, loose, layouts


def compile_zero2(zero_model, zero_optimizer, data, model, layouts, zero1, mesh):
    # --8<-- [start:zero2-step]
    everywhere = NamedSharding(mesh, P())
    homes = jax.tree.map(lambda a: a.sharding, nnx.state(model, nnx.Param))  # (1)!

    def zero2_step(model, optimizer, x, y):
        loss, grads = nnx.value_and_grad(loss_fn)(model, x, y)
        grads = jax.lax.with_sharding_constraint(grads, homes)
        optimizer.update(model, grads)
        return loss, model, optimizer

    args = (zero_model, zero_optimizer, *data[0])
    zero2 = jax.jit(zero2_step, out_shardings=(everywhere, *layouts))
    zero2 = zero2.lower(*args).compile()
    print_collectives(zero2)
    print(
        "the same collectives as ZeRO-1:",
        read_collectives(zero2) == read_collectives(zero1),
    )
    # --8<-- [end:zero2-step]
    return zero2, homes


def train_zero(
    zero_model, zero_optimizer, data, zero1, zero2, reference_losses, reference
):
    # --8<-- [start:zero-train]
    trained = {}
    for label, program in [("ZeRO-1", zero1), ("ZeRO-2", zero2)]:
        z_model, z_optimizer, z_losses = zero_model, zero_optimizer, []
        for x, y in data:
            loss, z_model, z_optimizer = program(z_model, z_optimizer, x, y)
            z_losses.append(float(loss))
        trained[label] = z_model, z_optimizer, z_losses
        gaps = jax.tree.map(
            lambda a, b: float(jnp.max(jnp.abs(a - b))),
            nnx.state(z_model, nnx.Param),
            nnx.state(reference, nnx.Param),
        )
        loss_gap = max(
            abs(a - b) for a, b in zip(z_losses, reference_losses, strict=True)
        )
        close = max(jax.tree.leaves(gaps)) <= 1e-5 and loss_gap <= 1e-5
        print(f"{label}: losses and parameters within {1e-5:g} of one device: {close}")
    z_mu = z_optimizer.opt_state[0].mu["up"]["kernel"][...]
    print("up.kernel:", z_model.up.kernel[...].sharding.spec)
    print("its mu:   ", z_mu.sharding.spec)
    # --8<-- [end:zero-train]
    return trained


def dp_step(model, optimizer, x, y):
    """The page's data-parallel `step` (an earlier block), which ZeRO-1 jits with
    `out_shardings`."""
    loss = train_step(model, optimizer, x, y)
    return loss, model, optimizer


def main() -> None:
    from snippets.models import train_reference
    from snippets.training.fsdp import memory, placement, step

    mesh = placement.data_mesh()
    specs, model, optimizer = placement.place_fsdp(mesh)
    replicated, replicated_optimizer = memory.replicated_baseline(mesh)
    data = step.sharded_data(mesh)
    zero_model, zero_optimizer = place_zero(
        specs, mesh, replicated, replicated_optimizer, model, optimizer
    )

    zero1, _, layouts = compile_zero1(dp_step, zero_model, zero_optimizer, data, mesh)
    zero2, _ = compile_zero2(
        zero_model, zero_optimizer, data, model, layouts, zero1, mesh
    )
    reference_losses, reference = train_reference(steps=5, batch=64)
    train_zero(
        zero_model, zero_optimizer, data, zero1, zero2, reference_losses, reference
    )


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
