"""Sizes that do not divide the mesh: what JAX refuses, where the work quietly stops being
split, how to check for it, and the fix (pad to a multiple, carry a mask).

Run `python -m snippets.advanced.shapes_and_randomness.uneven` to print what the page shows.
"""

# --8<-- [start:imports]
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import P
from jax.sharding import AxisType, Mesh, NamedSharding

# --8<-- [end:imports]
# On the page, this is defined by an earlier block.
from snippets.hlo import print_collectives


def build_meshes() -> tuple[Mesh, Mesh]:
    # --8<-- [start:meshes]
    mesh = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Explicit,))
    auto_mesh = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Auto,))
    # --8<-- [end:meshes]
    return mesh, auto_mesh


def refused(mesh: Mesh) -> None:
    # --8<-- [start:refused]
    ten = np.arange(10.0)
    try:
        jax.device_put(ten, NamedSharding(mesh, P("x")))
    except ValueError as err:
        print(f"ValueError: {str(err).splitlines()[0]}")
    # --8<-- [end:refused]


def padded_inside(auto_mesh: Mesh):
    # --8<-- [start:padded-inside]
    def sum_of_cosines(a):
        cosines = jnp.cos(a)
        spread = jax.lax.with_sharding_constraint(
            cosines, NamedSharding(auto_mesh, P("x"))
        )
        return jnp.sum(spread)

    ten = np.arange(10.0, dtype=np.float32)
    compiled = jax.jit(sum_of_cosines).lower(ten).compile()
    print("cosines per device:", compiled.cost_analysis()["transcendentals"])  # (1)!
    print_collectives(compiled)
    print(f"sum: {compiled(ten):.4f}   NumPy: {np.cos(ten).sum():.4f}")
    # --8<-- [end:padded-inside]
    return compiled


# --8<-- [start:forward]
def forward(x, w):
    """One dense layer: the work that should be split over the batch."""
    return jnp.tanh(x @ w)


# --8<-- [end:forward]


def build_data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # --8<-- [start:data]
    rng = np.random.default_rng(0)
    batch = rng.normal(size=(10, 32)).astype(np.float32)  # 10 examples, 8 devices
    targets = rng.normal(size=(10, 64)).astype(np.float32)
    weights = rng.normal(size=(32, 64)).astype(np.float32) / 8
    # --8<-- [end:data]
    return batch, targets, weights


def replicated(mesh: Mesh, batch: np.ndarray, weights: np.ndarray):
    # --8<-- [start:replicated]
    everywhere = NamedSharding(mesh, P())
    x = jax.device_put(batch, everywhere)  # (1)!
    w = jax.device_put(weights, everywhere)
    compiled = jax.jit(forward).lower(x, w).compile()
    y = compiled(x, w)
    print("x:", jax.typeof(x), "  y:", jax.typeof(y))
    print("rows of y per device:", {s.data.shape[0] for s in y.addressable_shards})
    print_collectives(compiled)
    print("flops per device:", int(compiled.cost_analysis()["flops"]))  # (2)!
    # --8<-- [end:replicated]
    return compiled, y


def slice_on_auto(auto_mesh: Mesh, batch: np.ndarray, weights: np.ndarray):
    # --8<-- [start:slice-auto]
    def forward_real_rows(x, w, n):  # x: n real rows, then padding
        return forward(x[:n], w)

    padded = np.pad(batch, ((0, 6), (0, 0)))  # 16 rows: they split over 8
    x = jax.device_put(padded, NamedSharding(auto_mesh, P("x")))
    w = jax.device_put(weights, NamedSharding(auto_mesh, P()))
    compiled = jax.jit(forward_real_rows, static_argnums=2).lower(x, w, 10).compile()
    y = compiled(x, w)
    rows = y.addressable_shards[0].data.shape[0]
    print("y:", y.sharding.spec, " rows per device:", rows)
    print_collectives(compiled)
    next_layer = jax.jit(forward).lower(y, w.T).compile()
    print("next layer, flops per device:", int(next_layer.cost_analysis()["flops"]))
    # --8<-- [end:slice-auto]
    return forward_real_rows, padded, compiled, y, next_layer


def slice_on_explicit(mesh: Mesh, forward_real_rows, padded, weights):
    # --8<-- [start:slice-explicit]
    x = jax.device_put(padded, NamedSharding(mesh, P("x")))
    w = jax.device_put(weights, NamedSharding(mesh, P()))
    try:
        jax.jit(forward_real_rows, static_argnums=2)(x, w, 10)
    except Exception as err:  # ShardingTypeError, which jax does not export
        print(f"{type(err).__name__}: {str(err).splitlines()[0]}")
    # --8<-- [end:slice-explicit]


# --8<-- [start:check-divides]
def check_divides(shape, spec, mesh):
    """Raise a ValueError if `spec` cannot split `shape` evenly on `mesh`."""
    names = [(e,) if isinstance(e, str) else tuple(e or ()) for e in spec]
    if len(spec) > len(shape) or not set().union(*names) <= set(mesh.axis_names):
        raise ValueError(
            f"{spec} does not fit shape {shape} on axes {mesh.axis_names}."
        )
    for dim, axes in enumerate(names):
        ways = math.prod(mesh.shape[a] for a in axes)  # devices that split `dim`
        if shape[dim] % ways:
            raise ValueError(
                f"{spec} splits dimension {dim} of {shape} over {ways} devices: "
                f"pad it from {shape[dim]} to {shape[dim] + -shape[dim] % ways}."
            )


# --8<-- [end:check-divides]


def checked(mesh: Mesh, batch: np.ndarray) -> None:
    # --8<-- [start:checked]
    check_divides((16, 32), P("x"), mesh)  # silent: 16 rows split over 8
    try:
        check_divides(batch.shape, P("x"), mesh)
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:checked]


# --8<-- [start:pad-rows]
def pad_rows(a: np.ndarray, multiple: int) -> tuple[np.ndarray, np.ndarray]:
    """`a` with rows of zeros added up to a multiple of `multiple` rows, and a mask that
    is True on the rows that were there before."""
    if multiple < 1:
        raise ValueError(f"multiple must be 1 or more, got {multiple}.")
    extra = -len(a) % multiple  # 0 when len(a) already divides
    mask = np.arange(len(a) + extra) < len(a)
    return np.pad(a, [(0, extra)] + [(0, 0)] * (a.ndim - 1)), mask


# --8<-- [end:pad-rows]


def split_padded(mesh: Mesh, batch: np.ndarray, weights: np.ndarray):
    # --8<-- [start:split-padded]
    by_rows = NamedSharding(mesh, P("x"))
    padded, mask = pad_rows(batch, mesh.shape["x"])
    check_divides(padded.shape, P("x"), mesh)
    x = jax.device_put(padded, by_rows)
    w = jax.device_put(weights, NamedSharding(mesh, P()))
    compiled = jax.jit(forward).lower(x, w).compile()
    y = compiled(x, w)
    print("x:", jax.typeof(x), "  y:", jax.typeof(y))
    print("rows of y per device:", {s.data.shape[0] for s in y.addressable_shards})
    print_collectives(compiled)
    print("flops per device:", int(compiled.cost_analysis()["flops"]))
    # --8<-- [end:split-padded]
    return compiled, x, w, y, mask


# --8<-- [start:masked-loss]
def masked_mean_loss(w, x, targets, mask):
    """Mean squared error over the rows where `mask` is True."""
    real = mask[:, None]
    x, targets = jnp.where(real, x, 0.0), jnp.where(real, targets, 0.0)  # (1)!
    per_row = jnp.mean((forward(x, w) - targets) ** 2, axis=-1)
    return jnp.sum(jnp.where(mask, per_row, 0.0)) / jnp.sum(mask)  # (2)!


# --8<-- [end:masked-loss]


def masked_training_step(mesh: Mesh, batch, targets, weights, x, w, mask):
    by_rows = NamedSharding(mesh, P("x"))  # on the page, from the block before
    # --8<-- [start:masked-step]
    padded_targets, _ = pad_rows(targets, mesh.shape["x"])
    t, m = jax.device_put(padded_targets, by_rows), jax.device_put(mask, by_rows)
    step = jax.jit(jax.value_and_grad(masked_mean_loss))
    compiled = step.lower(w, x, t, m).compile()
    loss, grad = compiled(w, x, t, m)
    print_collectives(compiled)

    numpy_loss = np.mean((np.tanh(batch @ weights) - targets) ** 2)  # the 10 rows
    one_device = jax.grad(lambda w: jnp.mean((forward(batch, w) - targets) ** 2))
    print(f"loss {loss:.3f}, NumPy on the 10 rows {numpy_loss:.3f}")
    gap = abs(grad - one_device(weights)).max()
    print(f"gradient within {1e-6:g} of one device: {gap <= 1e-6}")
    # --8<-- [end:masked-step]
    return compiled, loss, grad, numpy_loss


def main() -> None:
    mesh, auto_mesh = build_meshes()
    refused(mesh)
    padded_inside(auto_mesh)
    batch, targets, weights = build_data()
    replicated(mesh, batch, weights)
    forward_real_rows, padded, *_ = slice_on_auto(auto_mesh, batch, weights)
    slice_on_explicit(mesh, forward_real_rows, padded, weights)
    checked(mesh, batch)
    _, x, w, _, mask = split_padded(mesh, batch, weights)
    masked_training_step(mesh, batch, targets, weights, x, w, mask)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
