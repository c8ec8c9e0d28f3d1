"""A column-then-row parallel MLP: place the kernels, draw them, run the forward pass.

Run `python -m snippets.training.tensor_parallel.column_row` to print what the page shows.
"""

# --8<-- [start:imports]
import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from jax import P
from jax.sharding import AxisType, Mesh, NamedSharding

# --8<-- [end:imports]
# The page shows these by including the sections of snippets/models.py.
from snippets.hlo import print_collectives
from snippets.models import D_HIDDEN, D_IN, D_OUT, MLP


def model_mesh() -> Mesh:
    # --8<-- [start:mesh]
    mesh = jax.make_mesh((8,), ("model",), axis_types=(AxisType.Auto,))
    print(mesh)
    # --8<-- [end:mesh]
    return mesh


# --8<-- [start:shard-params]
def shard_params(model: nnx.Module, mesh: Mesh, specs: dict[str, P]) -> None:
    """Place each nnx.Param of `model` on `mesh` as `specs[name]` says."""
    params = {
        ".".join(map(str, path)): node  # (1)!
        for path, node in nnx.iter_graph(model)
        if isinstance(node, nnx.Param)
    }
    if missing := sorted(params.keys() - specs.keys()):
        raise ValueError(f"No spec for {missing}: add them to `specs`.")
    shardings = {}
    for name, param in params.items():  # check them all before moving any
        spec = specs[name]
        if len(spec) > param.ndim:
            raise ValueError(f"{spec} has more entries than {name} has axes.")
        shardings[name] = NamedSharding(mesh, spec)  # (2)!
        for dim, axes in enumerate(spec):
            axes = (axes,) if isinstance(axes, str) else (axes or ())
            ways = math.prod(mesh.shape[axis] for axis in axes)
            if param.shape[dim] % ways:
                over = " and ".join(repr(axis) for axis in axes)
                raise ValueError(
                    f"{name} has shape {param.shape}: its dimension "
                    f"{dim} ({param.shape[dim]}) does not split evenly over "
                    f"mesh axis {over} ({ways} devices). Make it a multiple "
                    f"of {ways}, or split it over a smaller mesh axis."
                )
    for name, param in params.items():
        param.set_value(jax.device_put(param[...], shardings[name]))  # (3)!


# --8<-- [end:shard-params]


# --8<-- [start:print-params]
def print_params(model: nnx.Module) -> None:
    """One line per parameter: global shape, spec, and device 0's block."""
    rows = [("parameter", "shape", "spec", "per device")]
    for path, param in nnx.iter_graph(model):
        if isinstance(param, nnx.Param):
            array = param[...]
            shard = array.addressable_shards[0].data
            name = ".".join(map(str, path))
            rows.append((name, array.shape, array.sharding.spec, shard.shape))
    rows = [[str(cell) for cell in row] for row in rows]
    widths = [max(map(len, column)) for column in zip(*rows, strict=True)]
    for row in rows:
        cells = [c.ljust(w) for c, w in zip(row, widths, strict=True)]
        print("  ".join(cells).rstrip())


# --8<-- [end:print-params]


def place_mlp(mesh: Mesh) -> tuple[dict[str, P], MLP]:
    # --8<-- [start:place-mlp]
    column_row = {
        "up.kernel": P(None, "model"),  # (32, 128): split the output columns
        "up.bias": P("model"),  # one bias per hidden unit, split the same way
        "down.kernel": P("model", None),  # (128, 8): split the input rows
        "down.bias": P(),  # added after the partial sums are combined
    }
    model = MLP(D_IN, D_HIDDEN, D_OUT, rngs=nnx.Rngs(0))
    shard_params(model, mesh, column_row)
    print_params(model)
    # --8<-- [end:place-mlp]
    return column_row, model


def draw_kernels(model: MLP) -> None:
    # --8<-- [start:draw-kernels]
    print("up.kernel (32, 128): columns split")
    jax.debug.visualize_array_sharding(model.up.kernel[...])
    print("down.kernel (128, 8): rows split")
    jax.debug.visualize_array_sharding(model.down.kernel[...])
    # --8<-- [end:draw-kernels]


def hidden_stays_split(model: MLP, mesh: Mesh):
    # --8<-- [start:hidden]
    replicated = NamedSharding(mesh, P())
    batch = jax.random.normal(jax.random.key(1), (64, D_IN))
    x = jax.device_put(batch, replicated)

    def hidden_of(model, x):
        return jax.nn.relu(model.up(x))

    up = jax.jit(hidden_of).lower(model, x).compile()
    print_collectives(up)
    hidden = up(model, x)
    print("x:     ", x.shape, x.sharding.spec)
    print("hidden:", hidden.shape, hidden.sharding.spec)
    print("per device:", hidden.addressable_shards[0].data.shape)
    # --8<-- [end:hidden]
    return x, up, hidden


def forward(model: MLP, x: jax.Array):
    # --8<-- [start:forward]
    compiled = jax.jit(lambda model, x: model(x)).lower(model, x).compile()
    print_collectives(compiled)  # (1)!
    y = compiled(model, x)
    print("output:", y.shape, y.sharding.spec)

    unsharded = MLP(D_IN, D_HIDDEN, D_OUT, rngs=nnx.Rngs(0))  # (2)!
    expected = unsharded(np.asarray(x))
    gap = jnp.max(jnp.abs(y - expected))
    print(f"within {1e-5:g} of one device: {gap <= 1e-5}")
    # --8<-- [end:forward]
    return compiled, y, expected


def explicit_axes_refuse(column_row: dict[str, P], x: jax.Array) -> jax.Array:
    # --8<-- [start:explicit-refuses]
    explicit = jax.make_mesh((8,), ("model",), axis_types=(AxisType.Explicit,))
    model_e = MLP(D_IN, D_HIDDEN, D_OUT, rngs=nnx.Rngs(0))
    shard_params(model_e, explicit, column_row)
    try:
        with jax.set_mesh(explicit):
            jax.jit(lambda model, x: model(x))(model_e, np.asarray(x))
    except Exception as err:  # ShardingTypeError, not exported by jax
        print(f"{type(err).__name__}: {err}")

    # --8<-- [end:explicit-refuses]
    # --8<-- [start:explicit-answered]
    def forward_explicit(model, x):
        hidden = jax.nn.relu(model.up(x))
        return model.down(hidden, out_sharding=P())  # the full sum, on every device

    with jax.set_mesh(explicit):
        answered = jax.jit(forward_explicit)
        out_e = answered(model_e, np.asarray(x))
        print("output:", jax.typeof(out_e))
        print_collectives(answered.lower(model_e, np.asarray(x)).compile())
    # --8<-- [end:explicit-answered]
    return out_e


def hidden_not_divisible(column_row: dict[str, P], mesh: Mesh) -> None:
    # --8<-- [start:uneven]
    odd = nnx.eval_shape(lambda: MLP(D_IN, 100, D_OUT, rngs=nnx.Rngs(0)))  # (1)!
    try:
        shard_params(odd, mesh, column_row)
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:uneven]


def hidden_rounded_up(column_row: dict[str, P], mesh: Mesh) -> MLP:
    # --8<-- [start:uneven-fixed]
    hidden = -(-100 // 8) * 8  # round up to a multiple of the 8 devices: 104
    wider = MLP(D_IN, hidden, D_OUT, rngs=nnx.Rngs(0))
    shard_params(wider, mesh, column_row)
    print_params(wider)
    # --8<-- [end:uneven-fixed]
    return wider


def main() -> None:
    mesh = model_mesh()
    column_row, model = place_mlp(mesh)
    draw_kernels(model)
    x, _, _ = hidden_stays_split(model, mesh)
    forward(model, x)
    explicit_axes_refuse(column_row, x)
    # The page goes on with training.py and heads.py (each runnable on its own), then here.
    hidden_not_divisible(column_row, mesh)
    hidden_rounded_up(column_row, mesh)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
