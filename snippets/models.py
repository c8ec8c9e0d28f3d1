"""The one small model family every training page uses, and its single-device reference.

Pages include these sections (each page is its own program, so each shows the model it
trains); tests import them. Sizes are small and divisible by 8, so every strategy on the
8-device mesh splits them evenly.

    MLP        a two-layer perceptron: Linear(32 -> 128), relu, Linear(128 -> 8)
    Block      a transformer block: multi-head self-attention and an MLP, each residual
    batches    a fixed synthetic regression data set, so every strategy sees the same data
    train_reference   plain single-device training: what every strategy must reproduce
"""

# --8<-- [start:imports]
import jax
import jax.numpy as jnp
import optax
from flax import nnx

# --8<-- [end:imports]

# --8<-- [start:mlp]
D_IN, D_HIDDEN, D_OUT = 32, 128, 8


class MLP(nnx.Module):
    """Linear -> relu -> Linear. `up` widens to the hidden size, `down` narrows back."""

    def __init__(self, d_in: int, d_hidden: int, d_out: int, *, rngs: nnx.Rngs):
        self.up = nnx.Linear(d_in, d_hidden, rngs=rngs)
        self.down = nnx.Linear(d_hidden, d_out, rngs=rngs)

    def __call__(self, x):
        return self.down(jax.nn.relu(self.up(x)))


# --8<-- [end:mlp]


# --8<-- [start:block]
class Attention(nnx.Module):
    """Multi-head self-attention with the heads as an explicit weight dimension."""

    def __init__(self, d_model: int, num_heads: int, *, rngs: nnx.Rngs):
        if d_model % num_heads:
            raise ValueError(
                f"d_model={d_model} must be a multiple of num_heads={num_heads}."
            )
        head_dim = d_model // num_heads
        init = nnx.initializers.lecun_normal()
        # (q/k/v, d_model, heads, head_dim) and (heads, head_dim, d_model): splitting the
        # `heads` dimension over devices gives each device whole heads.
        self.qkv = nnx.Param(init(rngs.params(), (3, d_model, num_heads, head_dim)))
        self.out = nnx.Param(init(rngs.params(), (num_heads, head_dim, d_model)))

    def __call__(self, x):  # x: (batch, seq, d_model)
        q, k, v = jnp.einsum("bsd,cdhk->cbshk", x, self.qkv[...])
        scores = jnp.einsum("bshk,bthk->bhst", q, k) / jnp.sqrt(q.shape[-1])
        context = jnp.einsum("bhst,bthk->bshk", jax.nn.softmax(scores, axis=-1), v)
        return jnp.einsum("bshk,hkd->bsd", context, self.out[...])


class Block(nnx.Module):
    """x + attention(x), then + mlp(x): a transformer block without normalisation."""

    def __init__(self, d_model: int, num_heads: int, d_hidden: int, *, rngs: nnx.Rngs):
        self.attention = Attention(d_model, num_heads, rngs=rngs)
        self.mlp = MLP(d_model, d_hidden, d_model, rngs=rngs)

    def __call__(self, x):
        x = x + self.attention(x)
        return x + self.mlp(x)


# --8<-- [end:block]


# --8<-- [start:data]
def batches(steps: int, batch: int, seed: int = 0):
    """`steps` batches (x, y): y is a fixed nonlinear function of x, plus noise."""
    if steps < 1 or batch < 1:
        raise ValueError(f"need steps >= 1 and batch >= 1, got {steps} and {batch}.")
    key_w, key_x, key_n = jax.random.split(jax.random.key(seed), 3)
    w = jax.random.normal(key_w, (D_IN, D_OUT)) / jnp.sqrt(D_IN)
    x = jax.random.normal(key_x, (steps, batch, D_IN))
    noise = jax.random.normal(key_n, (steps, batch, D_OUT))
    y = jnp.tanh(x @ w) + 0.01 * noise
    return list(zip(x, y, strict=True))


def loss_fn(model, x, y):
    return jnp.mean((model(x) - y) ** 2)


# --8<-- [end:data]


# --8<-- [start:reference]
def train_step(model, optimizer, x, y):
    loss, grads = nnx.value_and_grad(loss_fn)(model, x, y)
    optimizer.update(model, grads)
    return loss


def train_reference(steps: int = 5, batch: int = 64, seed: int = 0):
    """Train a fresh MLP on one device; returns (losses, model)."""
    model = MLP(D_IN, D_HIDDEN, D_OUT, rngs=nnx.Rngs(seed))
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    step = nnx.jit(train_step)
    losses = [
        float(step(model, optimizer, x, y)) for x, y in batches(steps, batch, seed)
    ]
    return losses, model


# --8<-- [end:reference]


def main() -> None:
    losses, model = train_reference()
    print("losses:", [round(v, 4) for v in losses])
    shapes = jax.tree.map(jnp.shape, nnx.state(model, nnx.Param))
    print(shapes)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
