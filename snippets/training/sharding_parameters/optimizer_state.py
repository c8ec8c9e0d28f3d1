"""The optimizer state of a sharded model: Adam's moments follow the parameters.

Run `python -m snippets.training.sharding_parameters.optimizer_state` to print what the page shows.
"""

import jax
import optax
from flax import nnx

# On the page, these are defined by earlier blocks.
from snippets.models import MLP
from snippets.training.sharding_parameters.annotations import AnnotatedMLP
from snippets.training.sharding_parameters.path_rules import show_params

Mesh = jax.sharding.Mesh  # for the type hints; the page's code does not use it


def rules_optimizer(model: MLP) -> nnx.Optimizer:
    # --8<-- [start:optimizer]
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    show_params(nnx.state(optimizer), "Adam's state for the MLP sharded by rules")
    # --8<-- [end:optimizer]
    return optimizer


def optimizer_without_mesh(annotated: AnnotatedMLP) -> None:
    # --8<-- [start:optimizer-without-mesh]
    try:
        nnx.Optimizer(annotated, optax.adam(1e-2), wrt=nnx.Param)
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:optimizer-without-mesh]


def optimizer_with_mesh(annotated: AnnotatedMLP, mesh: Mesh) -> nnx.Optimizer:
    # --8<-- [start:optimizer-with-mesh]
    with jax.set_mesh(mesh):
        annotated_opt = nnx.Optimizer(annotated, optax.adam(1e-2), wrt=nnx.Param)
    params = jax.tree.leaves(nnx.state(annotated, nnx.Param))
    adam = annotated_opt.opt_state[0]  # (1)!
    for name, moments in [("mu", adam.mu), ("nu", adam.nu)]:
        pairs = zip(jax.tree.leaves(moments), params, strict=True)
        same = all(m.sharding == p.sharding for m, p in pairs)
        print(f"{name} is laid out like the parameters: {same}")
    # --8<-- [end:optimizer-with-mesh]
    return annotated_opt


def main() -> None:
    from snippets.training.sharding_parameters import annotations, path_rules

    mesh = path_rules.build_mesh()
    model = path_rules.sharded_model(mesh)
    annotated = annotations.with_mesh(mesh)
    rules_optimizer(model)
    optimizer_without_mesh(annotated)
    optimizer_with_mesh(annotated, mesh)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
