"""A small decoder-only transformer whose arrays carry logical axis names.

Run `python -m snippets.advanced.transformer.model` to print what the page shows.
"""

# --8<-- [start:imports]
import dataclasses

import jax
import jax.numpy as jnp
import optax
from flax import nnx
from jax import P

# --8<-- [end:imports]


# --8<-- [start:config]
@dataclasses.dataclass(frozen=True)
class Config:
    vocab: int = 64  # distinct tokens
    d_model: int = 32  # width of the residual stream
    heads: int = 4
    mlp: int = 128  # hidden units of each MLP
    layers: int = 2
    seq: int = 16  # tokens the model reads per example
    remat: bool = True  # recompute each layer in the backward pass


# --8<-- [end:config]


# --8<-- [start:rules]
RULES = (  # logical axis -> mesh axes
    ("batch", ("data", "fsdp")),  # the examples: split over both data axes
    ("embed", "fsdp"),  # the model width of every weight: FSDP
    ("vocab", "tensor"),  # the rest of each weight: tensor parallel
    ("heads", "tensor"),
    ("mlp", "tensor"),
    ("kv", None),  # within a head: whole
    ("layers", None),  # the stacked layer axis: whole
)


def mesh_axes(names, rules=RULES) -> P:
    """The PartitionSpec that `rules` give an array whose dimensions are `names`."""
    table = dict(rules)
    for name in names:
        if name is not None and name not in table:
            raise ValueError(
                f"No rule for the logical axis {name!r}: add ({name!r}, <mesh "
                f"axis or None>) to the rules, which know {sorted(table)}."
            )
    return P(*(None if name is None else table[name] for name in names))


# --8<-- [end:rules]


# --8<-- [start:sharding-helpers]
def explicit() -> bool:
    """Whether the mesh in context has Explicit axes."""
    mesh = jax.sharding.get_abstract_mesh()
    return not mesh.empty and mesh.are_all_axes_explicit


def constrain(x, *names):
    """Lay `x` out as the logical `names` of its dimensions say."""
    spec = mesh_axes(names)
    if explicit():
        return jax.reshard(x, spec)  # (1)!
    return jax.lax.with_sharding_constraint(x, spec)


def use(param, dtype=jnp.bfloat16):
    """A parameter as the forward pass uses it: cast, and whole along "embed"."""
    names = param.get_metadata()["out_sharding"]
    whole = [None if name == "embed" else name for name in names]
    return constrain(param[...].astype(dtype), *whole)  # (2)!


def summed_out(*names):
    """The `out_sharding` of a product that sums over a split dimension."""
    return mesh_axes(names) if explicit() else None  # (3)!


# --8<-- [end:sharding-helpers]


# --8<-- [start:block]
SMALL = nnx.initializers.normal(stddev=0.02)


def param(rngs, shape, names, init=SMALL):
    """A float32 parameter whose dimensions carry the logical `names`."""
    return nnx.Param(nnx.with_partitioning(init, names)(rngs.params(), shape))


def rms_norm(x, scale):
    """`x` scaled to a root mean square of 1 over the model width."""
    return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-6) * scale


class Block(nnx.Module):
    """Causal self-attention, then an MLP, each added to the residual stream."""

    def __init__(self, cfg: Config, *, rngs: nnx.Rngs):
        d, h, m = cfg.d_model, cfg.heads, cfg.mlp
        k = d // h  # width of one head
        ones = nnx.initializers.ones
        self.attn_norm = param(rngs, (d,), ("embed",), ones)
        self.qkv = param(rngs, (3, d, h, k), (None, "embed", "heads", "kv"))
        self.out = param(rngs, (h, k, d), ("heads", "kv", "embed"))
        self.mlp_norm = param(rngs, (d,), ("embed",), ones)
        self.up = param(rngs, (d, m), ("embed", "mlp"))
        self.down = param(rngs, (m, d), ("mlp", "embed"))

    def __call__(self, x):  # x: (batch, seq, d_model) float32
        h = rms_norm(x, use(self.attn_norm, jnp.float32)).astype(jnp.bfloat16)
        q, k, v = jnp.einsum("bsd,cdhk->cbshk", h, use(self.qkv))
        context = jax.nn.dot_product_attention(q, k, v, is_causal=True)  # (1)!
        by_example = summed_out("batch", None, None)
        x = x + jnp.einsum(
            "bshk,hkd->bsd", context, use(self.out), out_sharding=by_example
        )
        x = constrain(x, "batch", None, None)

        h = rms_norm(x, use(self.mlp_norm, jnp.float32)).astype(jnp.bfloat16)
        h = constrain(jax.nn.gelu(h @ use(self.up)), "batch", None, "mlp")
        x = x + jnp.matmul(h, use(self.down), out_sharding=by_example)
        return constrain(x, "batch", None, None)


# --8<-- [end:block]


# --8<-- [start:transformer]
class Transformer(nnx.Module):
    """Token embedding, `cfg.layers` blocks, a final norm and the output head."""

    def __init__(self, cfg: Config, *, rngs: nnx.Rngs):
        if cfg.d_model % cfg.heads:
            raise ValueError(f"Make d_model a multiple of heads, not {cfg}.")
        self.embed = param(rngs, (cfg.vocab, cfg.d_model), ("vocab", "embed"))

        @nnx.split_rngs(splits=cfg.layers)  # (1)!
        @nnx.vmap(transform_metadata={nnx.PARTITION_NAME: "layers"})
        def stack(rngs):
            return Block(cfg, rngs=rngs)

        self.layers = stack(rngs)
        ones = nnx.initializers.ones
        self.final_norm = param(rngs, (cfg.d_model,), ("embed",), ones)
        self.head = param(rngs, (cfg.d_model, cfg.vocab), ("embed", "vocab"))
        self.remat = cfg.remat

    def __call__(self, tokens):  # (batch, seq) int32 -> (batch, seq, vocab)
        by_example = summed_out("batch", None, None)
        x = use(self.embed, jnp.float32).at[tokens].get(out_sharding=by_example)
        x = constrain(x, "batch", None, None)

        def layer(x, block):
            return block(x)

        if self.remat:
            layer = nnx.remat(layer)  # (2)!
        over_layers = nnx.scan(  # (3)!
            layer,
            in_axes=(nnx.Carry, 0),
            out_axes=nnx.Carry,
            transform_metadata={nnx.PARTITION_NAME: "layers"},
        )
        x = over_layers(x, self.layers)
        h = rms_norm(x, use(self.final_norm, jnp.float32)).astype(jnp.bfloat16)
        return (h @ use(self.head)).astype(jnp.float32)  # (4)!


class TrainState(nnx.Module):
    """The model and its AdamW optimizer: everything one training step updates."""

    def __init__(self, cfg: Config, *, rngs: nnx.Rngs, learning_rate=1e-2):
        self.model = Transformer(cfg, rngs=rngs)
        adamw = optax.adamw(learning_rate)
        self.optimizer = nnx.Optimizer(self.model, adamw, wrt=nnx.Param)


# --8<-- [end:transformer]


def main() -> None:
    cfg = Config()
    with nnx.use_eager_sharding(False):
        abstract = nnx.eval_shape(lambda: Transformer(cfg, rngs=nnx.Rngs(0)))
    for path, node in nnx.iter_graph(abstract):
        if isinstance(node, nnx.Param):
            names = node.get_metadata()["out_sharding"]
            print(".".join(map(str, path)), node.shape, names, mesh_axes(names))


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
