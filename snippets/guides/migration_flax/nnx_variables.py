"""Flax NNX variables, then and now: creating sharded parameters under a mesh, the
`out_sharding` metadata, `v[...]` instead of `.value`, and `Variable` for `VariableState`.

Run `python -m snippets.guides.migration_flax.nnx_variables` to print what the page shows.
"""

# --8<-- [start:imports]
import warnings

import jax
import jax.numpy as jnp
from flax import nnx
from jax.sharding import AxisType, Mesh

# --8<-- [end:imports]

Caught = list[warnings.WarningMessage]


def build_mesh() -> Mesh:
    # --8<-- [start:mesh]
    mesh = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Explicit,))
    # --8<-- [end:mesh]
    return mesh


def old_partitioned(mesh: Mesh) -> tuple[object, Caught]:
    # --8<-- [start:old-partitioned]
    lecun = nnx.initializers.lecun_normal()
    kernel_init = nnx.with_partitioning(lecun, (None, "x"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with mesh:
                nnx.Linear(4, 8, kernel_init=kernel_init, rngs=nnx.Rngs(0))
        except ValueError as err:
            print(f"ValueError: {err}")
    for warning in caught:
        print(f"{warning.category.__name__}: {warning.message}")
    # --8<-- [end:old-partitioned]
    return kernel_init, caught


def new_partitioned(mesh: Mesh, kernel_init) -> nnx.Linear:
    # --8<-- [start:new-partitioned]
    with jax.set_mesh(mesh):
        layer = nnx.Linear(4, 8, kernel_init=kernel_init, rngs=nnx.Rngs(0))
    print("kernel:", jax.typeof(layer.kernel[...]))
    print("bias:  ", jax.typeof(layer.bias[...]))
    # --8<-- [end:new-partitioned]
    return layer


def old_sharding_metadata(mesh: Mesh) -> tuple[nnx.Param, nnx.Param, Caught]:
    # --8<-- [start:old-sharding-metadata]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with jax.set_mesh(mesh):
            first = nnx.Param(jnp.ones((4, 8)), sharding=(None, "x"))
            second = nnx.Param(jnp.ones((4, 8)), sharding_names=(None, "x"))
    for warning in caught:
        print(f"{warning.category.__name__}: {warning.message}")
    print(jax.typeof(first[...]), jax.typeof(second[...]))
    # --8<-- [end:old-sharding-metadata]
    return first, second, caught


def new_sharding_metadata(mesh: Mesh) -> nnx.Param:
    # --8<-- [start:new-sharding-metadata]
    with jax.set_mesh(mesh):
        weight = nnx.Param(jnp.ones((4, 8)), out_sharding=(None, "x"))
    print(jax.typeof(weight[...]), weight.get_metadata()["out_sharding"])
    # --8<-- [end:new-sharding-metadata]
    return weight


def old_value(model: nnx.Module) -> tuple[jax.Array, Caught]:
    # --8<-- [start:old-value]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bias_old = model.bias.value
        model.bias.value = bias_old + 1
    for warning in caught:
        print(f"{warning.category.__name__}: {warning.message}")
    # --8<-- [end:old-value]
    return bias_old, caught


def new_value(model: nnx.Module) -> tuple[jax.Array, jax.Array]:
    # --8<-- [start:new-value]
    bias = model.bias[...]  # (1)!
    model.bias[...] = bias - 1  # (2)!
    print(f"before: {bias[0]:.3f}  after: {model.bias[0]:.3f}")
    # --8<-- [end:new-value]
    return bias, model.bias[...]


def old_variable_state() -> tuple[type, Caught]:
    # --8<-- [start:old-variable-state]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old_class = nnx.VariableState
    for warning in caught:
        print(f"{warning.category.__name__}: {warning.message}")
    print(old_class is nnx.Variable)
    # --8<-- [end:old-variable-state]
    return old_class, caught


def main() -> None:
    from snippets.guides.migration_flax.nnx_optimizer import tiny_model

    mesh = build_mesh()
    model, *_ = tiny_model()
    kernel_init, _ = old_partitioned(mesh)
    new_partitioned(mesh, kernel_init)
    old_sharding_metadata(mesh)
    new_sharding_metadata(mesh)
    old_value(model)
    new_value(model)
    old_variable_state()


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
