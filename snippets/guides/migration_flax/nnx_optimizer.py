"""Flax NNX's optimizer, then and now: `wrt=` is required and `update` takes the model.

Run `python -m snippets.guides.migration_flax.nnx_optimizer` to print what the page shows.
"""

# --8<-- [start:imports]
import jax.numpy as jnp
import optax
from flax import nnx

# --8<-- [end:imports]


def tiny_model():
    # --8<-- [start:tiny-model]
    model = nnx.Linear(2, 1, rngs=nnx.Rngs(0))
    tx = optax.sgd(learning_rate=0.1)
    inputs = jnp.ones((4, 2))
    targets = jnp.ones((4, 1))

    def loss_fn(model, inputs, targets):
        return jnp.mean((model(inputs) - targets) ** 2)

    # --8<-- [end:tiny-model]
    return model, tx, inputs, targets, loss_fn


def old_optimizer(model: nnx.Module, tx: optax.GradientTransformation) -> None:
    # --8<-- [start:old-optimizer]
    try:
        nnx.Optimizer(model, tx)
    except TypeError as err:
        print(f"TypeError: {err}")
    # --8<-- [end:old-optimizer]


def new_optimizer(model: nnx.Module, tx: optax.GradientTransformation) -> nnx.Optimizer:
    # --8<-- [start:new-optimizer]
    optimizer = nnx.Optimizer(model, tx, wrt=nnx.Param)  # (1)!
    print("step:", optimizer.step[...], " optimizes:", optimizer.wrt.__name__)
    # --8<-- [end:new-optimizer]
    return optimizer


def old_update(model, optimizer, loss_fn, inputs, targets):
    # --8<-- [start:old-update]
    grads = nnx.grad(loss_fn)(model, inputs, targets)
    try:
        optimizer.update(grads)
    except TypeError as err:
        print(f"TypeError: {err}")
    # --8<-- [end:old-update]
    return grads


def new_update(model, optimizer, loss_fn, inputs, targets, grads) -> tuple:
    # --8<-- [start:new-update]
    before = loss_fn(model, inputs, targets)
    optimizer.update(model, grads)  # (1)!
    after = loss_fn(model, inputs, targets)
    print(f"loss {before:.4f} -> {after:.4f} after step {optimizer.step[...]}")
    # --8<-- [end:new-update]
    return before, after


def main() -> None:
    model, tx, inputs, targets, loss_fn = tiny_model()
    old_optimizer(model, tx)
    optimizer = new_optimizer(model, tx)
    grads = old_update(model, optimizer, loss_fn, inputs, targets)
    new_update(model, optimizer, loss_fn, inputs, targets, grads)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
