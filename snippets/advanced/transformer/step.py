"""The training step: bfloat16 compute, AdamW, a donated state, accumulated gradients.

Run `python -m snippets.advanced.transformer.step` to print what the page shows.
"""

import math

import jax
import jax.numpy as jnp
from flax import nnx

# --8<-- [start:imports]
from jax.sharding import Mesh, NamedSharding

# --8<-- [end:imports]
# The page shows these by including the sections of model.py and init.py.
from snippets.advanced.transformer.init import Sharded, build_mesh, sharded_init
from snippets.advanced.transformer.model import Config, constrain, mesh_axes


# --8<-- [start:data]
def token_batches(cfg: Config, steps: int, batch: int, seed: int = 0):
    """`steps` batches of `batch` sequences that count in steps of 1, 2 or 3."""
    if steps < 1 or batch < 1:
        raise ValueError(f"need steps >= 1 and batch >= 1, got {steps} and {batch}.")
    key = jax.random.key(seed)
    start = jax.random.randint(key, (steps, batch, 1), 0, cfg.vocab)
    position = jnp.arange(cfg.seq + 1)  # (1)!
    return (start + (1 + start % 3) * position) % cfg.vocab


def shard_batch(tokens, mesh: Mesh, microbatches: int = 1):
    """Split a batch's examples over the mesh axes of the "batch" rule."""
    spec = mesh_axes(("batch", None))
    ways = math.prod(mesh.shape[axis] for axis in spec[0]) * microbatches
    if tokens.shape[0] % ways:
        raise ValueError(
            f"A batch of {tokens.shape[0]} does not split into {microbatches} "
            f"microbatch(es) over {spec[0]}: make it a multiple of {ways}."
        )
    return jax.device_put(tokens, NamedSharding(mesh, spec))


# --8<-- [end:data]


# --8<-- [start:gradients]
def loss_fn(model, tokens):
    """Mean cross-entropy of predicting each next token, in float32."""
    logits = model(tokens[:, :-1])
    log_probs = jax.nn.log_softmax(logits, axis=-1)
    targets = jax.nn.one_hot(tokens[:, 1:], logits.shape[-1], dtype=jnp.float32)
    return -jnp.mean(jnp.sum(log_probs * targets, axis=-1))  # (1)!


def gradients(model, tokens, microbatches: int = 1):
    """The mean loss over `tokens` and its gradient, one microbatch at a time."""
    graphdef, params = nnx.split(model)

    def loss_and_grad(tokens):
        return jax.value_and_grad(
            lambda params: loss_fn(nnx.merge(graphdef, params), tokens)
        )(params)

    batch = tokens.shape[0]
    if batch % microbatches:
        raise ValueError(f"Make the batch of {batch} a multiple of {microbatches}.")
    if microbatches == 1:
        return loss_and_grad(tokens)
    micro = tokens.reshape(batch // microbatches, microbatches, -1).swapaxes(0, 1)
    micro = constrain(micro, None, "batch", None)  # (2)!

    def add(total, tokens):
        return jax.tree.map(jnp.add, total, loss_and_grad(tokens)), None

    zero = jax.tree.map(jnp.zeros_like, (jnp.zeros(()), params))
    total, _ = jax.lax.scan(add, zero, micro)  # (3)!
    return jax.tree.map(lambda t: t / microbatches, total)


# --8<-- [end:gradients]


# --8<-- [start:train-step]
def make_train_step(sharded: Sharded, mesh: Mesh, microbatches: int = 1):
    """The jitted step: state and a batch of tokens in; new state and loss out."""
    batch_sharding = NamedSharding(mesh, mesh_axes(("batch", None)))

    def train_step(state, tokens):
        with jax.sharding.use_abstract_mesh(mesh.abstract_mesh):  # (1)!
            train = nnx.merge(sharded.graphdef, state)
            loss, grads = gradients(train.model, tokens, microbatches)
            train.optimizer.update(train.model, grads)
            return nnx.state(train), loss

    return jax.jit(
        train_step,
        in_shardings=(sharded.shardings, batch_sharding),
        out_shardings=(sharded.shardings, None),
        donate_argnums=0,  # (2)!
    )


# --8<-- [end:train-step]


def compile_step(cfg: Config, sharded: Sharded, mesh: Mesh):
    # --8<-- [start:compile-step]
    batches = [shard_batch(t, mesh) for t in token_batches(cfg, steps=5, batch=8)]
    tokens_spec = jax.ShapeDtypeStruct(
        batches[0].shape, jnp.int32, sharding=batches[0].sharding
    )
    step = make_train_step(sharded, mesh)
    compiled = step.lower(sharded.abstract, tokens_spec).compile()  # (1)!
    # --8<-- [end:compile-step]
    return batches, tokens_spec, compiled


def first_step(compiled, state, batches):
    # --8<-- [start:first-step]
    old = state
    state, loss = compiled(old, batches[0])
    print(f"loss {float(loss):.3f}")
    print("old state deleted:", all(a.is_deleted() for a in jax.tree.leaves(old)))
    try:
        old["model"]["head"][...] + 1
    except RuntimeError as err:
        print(f"RuntimeError: {err}")
    # --8<-- [end:first-step]
    return state, float(loss)


# --8<-- [start:train]
def train(step, state, batches):
    losses = []
    for tokens in batches:
        state, loss = step(state, tokens)
        losses.append(float(loss))
    return state, losses


# --8<-- [end:train]


def one_device_comparison(cfg: Config, sharded: Sharded, compiled, batches):
    # --8<-- [start:one-device]
    one = build_mesh((1, 1, 1))  # the same axes, on one device
    alone = sharded_init(cfg, one)
    start = sharded.init()  # the same initial values, on the 8 devices
    start_alone = jax.device_put(jax.device_get(start), alone.shardings)  # (1)!
    _, losses = train(compiled, start, batches)
    batches_alone = [shard_batch(tokens, one) for tokens in batches]
    _, losses_alone = train(make_train_step(alone, one), start_alone, batches_alone)
    print(f"step   8 devices  one device  within a relative {2e-3:g}")
    for i, (a, b) in enumerate(zip(losses, losses_alone, strict=True)):
        print(f"{i:>4}  {a:>10.3f}  {b:>10.3f}  {abs(a - b) <= 2e-3 * b!s:>24}")
    # --8<-- [end:one-device]
    return losses, losses_alone


def accumulation(sharded: Sharded, mesh: Mesh, batches):
    # --8<-- [start:accumulate]
    @jax.jit
    def both(state, tokens):
        with jax.sharding.use_abstract_mesh(mesh.abstract_mesh):
            model = nnx.merge(sharded.graphdef, state).model
            return gradients(model, tokens), gradients(model, tokens, microbatches=2)

    (loss, grads), (loss_2, grads_2) = both(sharded.init(), batches[0])
    gaps = jax.tree.map(lambda a, b: abs(a - b).max(), grads, grads_2)
    largest = max(abs(g).max() for g in jax.tree.leaves(grads))
    gap = max(jax.tree.leaves(gaps))
    print(f"loss       one batch {loss:.3f}   two microbatches {loss_2:.3f}")
    print(f"gradients within 1% of the largest one: {gap <= 1e-2 * largest}")
    # --8<-- [end:accumulate]
    return (loss, grads), (loss_2, grads_2)


def main() -> None:
    from snippets.advanced.transformer.init import make_state

    mesh = build_mesh()
    cfg, sharded, state = make_state(mesh)
    batches, _, compiled = compile_step(cfg, sharded, mesh)
    first_step(compiled, state, batches)
    one_device_comparison(cfg, sharded, compiled, batches)
    accumulation(sharded, mesh, batches)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
