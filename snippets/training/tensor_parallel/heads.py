"""Attention split by heads: the transformer Block on the "model" axis.

Run `python -m snippets.training.tensor_parallel.heads` to print what the page shows.
"""

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from jax import P
from jax.sharding import Mesh, NamedSharding

# The page shows these by including the sections of snippets/models.py, hlo.py and
# column_row.py.
from snippets.hlo import print_collectives
from snippets.models import Block
from snippets.training.tensor_parallel.column_row import (
    model_mesh,
    place_mlp,
    print_params,
    shard_params,
)


def place_block(column_row: dict[str, P], mesh: Mesh) -> tuple[dict[str, P], Block]:
    # --8<-- [start:place-block]
    by_heads = {
        # qkv: (3, d_model, heads, head_dim), out: (heads, head_dim, d_model)
        "attention.qkv": P(None, None, "model", None),
        "attention.out": P("model", None, None),
        **{f"mlp.{name}": spec for name, spec in column_row.items()},  # (1)!
    }
    block = Block(d_model=32, num_heads=8, d_hidden=128, rngs=nnx.Rngs(0))
    shard_params(block, mesh, by_heads)
    print_params(block)
    # --8<-- [end:place-block]
    return by_heads, block


def block_forward(block: Block, mesh: Mesh):
    # --8<-- [start:block-forward]
    # 8 sequences of 16 tokens, each token a vector of d_model = 32
    tokens = jax.random.normal(jax.random.key(2), (8, 16, 32))
    tokens = jax.device_put(tokens, NamedSharding(mesh, P()))
    forward = jax.jit(lambda block, x: block(x))
    compiled = forward.lower(block, tokens).compile()
    print_collectives(compiled)
    out = compiled(block, tokens)

    unsharded = Block(d_model=32, num_heads=8, d_hidden=128, rngs=nnx.Rngs(0))
    expected = forward(unsharded, np.asarray(tokens))  # (1)!
    gap = jnp.max(jnp.abs(out - expected))
    print(f"within {1e-5:g} of one device: {gap <= 1e-5}")
    # --8<-- [end:block-forward]
    return tokens, compiled, out, expected


def block_backward(block: Block, tokens: jax.Array):
    # --8<-- [start:block-backward]
    def loss(block, x):
        return jnp.mean(block(x) ** 2)

    compiled = jax.jit(nnx.grad(loss)).lower(block, tokens).compile()
    print_collectives(compiled)
    grads = compiled(block, tokens)
    print("gradient of attention.qkv:", grads.attention.qkv[...].sharding.spec)
    # --8<-- [end:block-backward]
    return loss, compiled, grads


def main_steps(column_row: dict[str, P], mesh: Mesh) -> None:
    _, block = place_block(column_row, mesh)
    tokens, _, _, _ = block_forward(block, mesh)
    block_backward(block, tokens)


def main() -> None:
    mesh = model_mesh()
    specs, _ = place_mlp(mesh)
    main_steps(specs, mesh)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
