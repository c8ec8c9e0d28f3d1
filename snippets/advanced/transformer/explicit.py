"""The same model and step on Explicit axes, where each array's type carries its layout.

Run `python -m snippets.advanced.transformer.explicit` to print what the page shows.
"""

import jax
import jax.numpy as jnp
import optax
from jax.sharding import AxisType

# The page imports these with model.py's and init.py's imports, and shows them by
# including the sections of model.py, init.py and step.py.
from snippets.advanced.transformer.init import build_mesh, sharded_init
from snippets.advanced.transformer.model import Config, mesh_axes
from snippets.advanced.transformer.step import make_train_step, shard_batch, train


def explicit_run(cfg: Config, sharded, batches, losses):
    # --8<-- [start:explicit]
    mesh_x = build_mesh(kind=AxisType.Explicit)
    sharded_x = sharded_init(cfg, mesh_x)
    state_x = jax.device_put(sharded.init(), sharded_x.shardings)  # (1)!
    print(jax.typeof(state_x["model"]["layers"]["up"][...]))
    batches_x = [shard_batch(tokens, mesh_x) for tokens in batches]
    _, losses_x = train(make_train_step(sharded_x, mesh_x), state_x, batches_x)
    print(f"step   Auto axes  Explicit axes  within a relative {2e-3:g}")
    for i, (a, b) in enumerate(zip(losses, losses_x, strict=True)):
        print(f"{i:>4}  {a:>10.3f}  {b:>13.3f}  {abs(a - b) <= 2e-3 * a!s:>24}")
    # --8<-- [end:explicit]
    return mesh_x, losses_x


def optax_loss_on_explicit(cfg: Config, mesh_x):
    """Optax's integer-label loss on Explicit axes: the page's sentence on why its loss is
    a one-hot product (tests/advanced/transformer/test_explicit.py holds it to this)."""
    with jax.set_mesh(mesh_x):
        by_vocab = mesh_axes(("batch", None, "vocab"))
        logits = jnp.zeros((8, cfg.seq, cfg.vocab), out_sharding=by_vocab)
        labels = jnp.zeros(
            (8, cfg.seq), jnp.int32, out_sharding=mesh_axes(("batch", None))
        )
        try:
            optax.softmax_cross_entropy_with_integer_labels(logits, labels)
        except Exception as err:  # ShardingTypeError, which JAX does not export
            print(f"{type(err).__name__}: {err}")


def main() -> None:
    from snippets.advanced.transformer.step import token_batches

    cfg = Config()
    sharded = sharded_init(cfg, build_mesh())
    batches = list(token_batches(cfg, steps=5, batch=8))
    mesh_x, _ = explicit_run(cfg, sharded, batches, [0.0] * 5)
    optax_loss_on_explicit(cfg, mesh_x)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
