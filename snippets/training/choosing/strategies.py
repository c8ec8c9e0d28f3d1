"""Every strategy as a table of sharding rules, and the model and batch placed by them.

Run `python -m snippets.training.choosing.strategies` to print what the page shows.
"""

# --8<-- [start:imports]
import jax
import numpy as np
import optax
from flax import nnx
from jax import P
from jax.sharding import AxisType, Mesh, NamedSharding

# --8<-- [end:imports]
# On the page, these are defined by earlier blocks.
from snippets.models import D_IN, D_OUT, MLP, batches

# --8<-- [start:rules]
TP = {
    "up.kernel": P(None, "model"),
    "up.bias": P("model"),
    "down.kernel": P("model", None),
}
FSDP = {
    "up.kernel": P("data", None),
    "up.bias": P("data"),
    "down.kernel": P(None, "data"),
    "down.bias": P("data"),
}
# name: (mesh shape, mesh axes, weight specs, batch spec); unlisted weights: P()
STRATEGIES = {
    "data parallel": ((8,), ("data",), {}, P("data")),
    "FSDP": ((8,), ("data",), FSDP, P("data")),
    "tensor parallel": ((8,), ("model",), TP, P()),
    "2-D (2, 4)": ((2, 4), ("data", "model"), TP, P("data")),
    "2-D (4, 2)": ((4, 2), ("data", "model"), TP, P("data")),
}
# --8<-- [end:rules]


# --8<-- [start:place]
def strategy_mesh(strategy: str) -> Mesh:
    shape, axes, _, _ = STRATEGIES[strategy]
    return jax.make_mesh(shape, axes, axis_types=(AxisType.Auto,) * len(axes))


def name_of(path) -> str:
    return jax.tree_util.keystr(path, simple=True, separator=".")


def spec_for(path, rules: dict[str, P]) -> P:
    """The spec of one array of the model or optimizer state, by its path."""
    name = f".{name_of(path)}."
    found = [spec for key, spec in rules.items() if f".{key}." in name]  # (1)!
    return found[0] if found else P()


def check_split(name: str, shape: tuple, spec: P, mesh: Mesh) -> None:
    """Refuse a spec that would split a dimension unevenly."""
    for size, axis in zip(shape, spec, strict=False):
        n = mesh.shape[axis] if axis else 1
        if size % n:
            raise ValueError(
                f"{name} has shape {shape}: its dimension of {size} cannot be "
                f"split over the {n} devices of mesh axis {axis!r}. Make it a "
                f"multiple of {n}, or use a smaller {axis!r} axis."
            )


def place_state(strategy: str, model: MLP, optimizer: nnx.Optimizer) -> None:
    """Put the weights and Adam's state where the strategy's rules say."""
    mesh, rules = strategy_mesh(strategy), STRATEGIES[strategy][2]
    state = nnx.state((model, optimizer))
    for path, leaf in jax.tree.leaves_with_path(state):
        spec = spec_for(path, rules)
        check_split(name_of(path[1:-1]), leaf.shape, spec, mesh)
    shardings = jax.tree.map_with_path(
        lambda path, _: NamedSharding(mesh, spec_for(path, rules)), state
    )
    host = jax.tree.map(np.asarray, state)  # (2)!
    nnx.update((model, optimizer), jax.device_put(host, shardings))


def place_batch(strategy: str, x: jax.Array, y: jax.Array):
    """Split (or copy) one batch over the strategy's mesh."""
    mesh, batch_spec = strategy_mesh(strategy), STRATEGIES[strategy][3]
    n = mesh.shape.get("data", 1)
    if len(x) % n:
        raise ValueError(
            f"a batch of {len(x)} cannot be split over the {n} devices of mesh "
            f"axis 'data': use a batch that is a multiple of {n}."
        )
    host = (np.asarray(x), np.asarray(y))
    return jax.device_put(host, NamedSharding(mesh, batch_spec))


# --8<-- [end:place]


def place_fsdp() -> tuple[MLP, nnx.Optimizer, jax.Array, jax.Array]:
    # --8<-- [start:place-fsdp]
    model = MLP(D_IN, 128, D_OUT, rngs=nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    place_state("FSDP", model, optimizer)
    x, y = place_batch("FSDP", *batches(3, 64)[0])
    mu = optimizer.opt_state[0].mu
    print(
        "up.kernel:   ",
        jax.typeof(model.up.kernel[...]),
        model.up.kernel[...].sharding.spec,
    )
    print("its Adam mu: ", mu["up"]["kernel"][...].sharding.spec)
    print("down.kernel: ", model.down.kernel[...].sharding.spec)
    print(
        "x:           ",
        x.sharding.spec,
        "rows per device:",
        x.addressable_shards[0].data.shape[0],
    )
    # --8<-- [end:place-fsdp]
    return model, optimizer, x, y


def bad_sizes(x: jax.Array, y: jax.Array) -> None:
    # --8<-- [start:bad-sizes]
    def hidden_100():
        model = MLP(D_IN, 100, D_OUT, rngs=nnx.Rngs(0))
        return model, nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)

    model, optimizer = nnx.eval_shape(hidden_100)  # (1)!
    try:
        place_state("tensor parallel", model, optimizer)
    except ValueError as err:
        print(f"ValueError: {err}")
    try:
        place_batch("data parallel", x[:60], y[:60])  # 60 rows over 8 devices
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:bad-sizes]


def main() -> None:
    _, _, x, y = place_fsdp()
    bad_sizes(x, y)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
