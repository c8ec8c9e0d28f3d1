"""A train step on the sharded model computes what single-device training computes.

Run `python -m snippets.training.sharding_parameters.train` to print what the page shows.
"""

import jax
from flax import nnx
from jax import P
from jax.sharding import NamedSharding

# On the page, these are defined by earlier blocks.
from snippets.models import batches, train_reference, train_step
from snippets.training.sharding_parameters.annotations import AnnotatedMLP
from snippets.training.sharding_parameters.path_rules import show_params

Mesh = jax.sharding.Mesh  # for the type hints; the page's code does not use it


def train(
    annotated: AnnotatedMLP, annotated_opt: nnx.Optimizer, mesh: Mesh
) -> list[float]:
    # --8<-- [start:train]
    step = nnx.jit(train_step)
    by_example = NamedSharding(mesh, P("data"))  # (1)!
    losses = []
    for x, y in batches(steps=5, batch=64):
        x, y = jax.device_put(x, by_example), jax.device_put(y, by_example)
        losses.append(float(step(annotated, annotated_opt, x, y)))
    print("losses:", [round(loss, 3) for loss in losses])
    show_params(nnx.state(annotated, nnx.Param), "AnnotatedMLP after 5 steps")
    # --8<-- [end:train]
    return losses


def compare(losses: list[float], annotated: AnnotatedMLP) -> tuple:
    # --8<-- [start:compare]
    ref_losses, ref_model = train_reference(steps=5, batch=64)
    loss_gap = max(abs(a - b) / b for a, b in zip(losses, ref_losses, strict=True))
    pairs = zip(
        jax.tree.leaves(nnx.state(annotated, nnx.Param)),
        jax.tree.leaves(nnx.state(ref_model, nnx.Param)),
        strict=True,
    )
    param_gap = max(
        abs(jax.device_get(a) - jax.device_get(b)).max()  # (1)!
        for a, b in pairs
    )
    print("one device:", [round(loss, 3) for loss in ref_losses])
    print(f"losses within a relative {1e-5:g}: {loss_gap <= 1e-5}")
    print(f"parameters within {1e-5:g}:       {param_gap <= 1e-5}")
    # --8<-- [end:compare]
    return ref_losses, ref_model


def main() -> None:
    from snippets.training.sharding_parameters import (
        annotations,
        optimizer_state,
        path_rules,
    )

    mesh = path_rules.build_mesh()
    annotated = annotations.with_mesh(mesh)
    annotated_opt = optimizer_state.optimizer_with_mesh(annotated, mesh)
    losses = train(annotated, annotated_opt, mesh)
    compare(losses, annotated)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
