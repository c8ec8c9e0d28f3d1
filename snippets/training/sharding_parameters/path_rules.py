"""Sharding a model's parameters by rules on their paths, and a table to show the result.

Run `python -m snippets.training.sharding_parameters.path_rules` to print what the page shows.
"""

# On the page, `jax` and `nnx` come from the model's imports, shown with these.
import jax
from flax import nnx

# --8<-- [start:imports]
from jax import P
from jax.sharding import AxisType, NamedSharding
from rich.console import Console
from rich.table import Table

# --8<-- [end:imports]
# On the page, these are defined by earlier blocks (the included model sections).
from snippets.models import D_HIDDEN, D_IN, D_OUT, MLP

Mesh = jax.sharding.Mesh  # for the type hints; the page's code does not use it


def build_mesh() -> Mesh:
    # --8<-- [start:mesh]
    auto = AxisType.Auto
    mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(auto, auto))
    print(mesh)
    # --8<-- [end:mesh]
    return mesh


# --8<-- [start:show-params]
def is_variable(node):
    return isinstance(node, nnx.Variable)


def show_params(state, title):
    """One row per variable in `state`: shape, spec, what one device holds."""
    table = Table(title=title, title_justify="left")
    for column in ("variable", "shape", "spec", "per device"):
        table.add_column(column)
    for path, variable in jax.tree_util.tree_leaves_with_path(
        state,
        is_leaf=is_variable,  # (1)!
    ):
        value = variable[...]
        name = "/".join(str(key.key) for key in path)
        spec = getattr(value.sharding, "spec", "one device")  # (2)!
        shard = value.addressable_shards[0].data.shape
        table.add_row(name, str(value.shape), str(spec), str(shard))
    Console().print(table)


# --8<-- [end:show-params]


# --8<-- [start:param-spec]
RULES = {  # (1)!
    "up/kernel": P(None, "model"),  # (d_in, d_hidden): split the hidden units
    "up/bias": P("model"),  # (d_hidden,): the same split as up's outputs
    "down/kernel": P("model", None),  # (d_hidden, d_out): split its inputs
}  # anything else, such as down/bias, is replicated: P()


def param_spec(name, shape, mesh):
    """The spec for the parameter at `name`, checked against the mesh."""
    spec = RULES.get(name, P())
    if len(spec) > len(shape):
        raise ValueError(f"{name}: rule {spec} has more entries than {shape}.")
    for dim, (size, axis) in enumerate(zip(shape, spec, strict=False)):  # (2)!
        if axis is None:
            continue
        if axis not in mesh.axis_names:
            raise ValueError(
                f"{name}: the rule {spec} names mesh axis '{axis}', which "
                f"this mesh does not have (its axes are {mesh.axis_names})."
            )
        devices = mesh.shape[axis]
        if size % devices:
            raise ValueError(
                f"{name} has shape {shape}: dimension {dim} ({size}) does "
                f"not split over the {devices} devices of mesh axis "
                f"'{axis}'. Make it a multiple of {devices}, or change the "
                f"rule for {name}."
            )
    return spec


# --8<-- [end:param-spec]


# --8<-- [start:shard-by-path]
def shard_by_path(model, mesh):
    """Place every parameter of `model` on `mesh` as the rules say."""
    state = nnx.state(model)

    def rule(path, variable):
        name = "/".join(str(key.key) for key in path)  # "up/kernel", ...
        return NamedSharding(mesh, param_spec(name, variable.shape, mesh))

    where = jax.tree_util.tree_map_with_path(rule, state, is_leaf=is_variable)
    nnx.update(model, jax.device_put(state, where))  # (1)!


# --8<-- [end:shard-by-path]


def sharded_model(mesh: Mesh) -> MLP:
    # --8<-- [start:sharded-model]
    model = MLP(D_IN, D_HIDDEN, D_OUT, rngs=nnx.Rngs(0))
    shard_by_path(model, mesh)
    show_params(nnx.state(model), "MLP, sharded by path rules")
    # --8<-- [end:sharded-model]
    return model


def bad_hidden_size(mesh: Mesh) -> None:
    # --8<-- [start:bad-size]
    try:
        param_spec("up/kernel", (D_IN, 90), mesh)  # an MLP with 90 hidden units
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:bad-size]


def main() -> None:
    mesh = build_mesh()
    sharded_model(mesh)
    bad_hidden_size(mesh)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
