"""A small decoder-only transformer whose arrays carry logical axis names.

Run `python -m snippets.advanced.transformer.model` to print what the page shows.
"""

# --8<-- [start:imports]
import dataclasses
from collections.abc import Callable

import jax
import jax.numpy as jnp
import optax
from flax import nnx
from jax import P
from jax.ad_checkpoint import checkpoint_name

# --8<-- [end:imports]


# --8<-- [start:config]
# --8<-- [start:remat-policies]
SAVED_NAMES = ("qkv", "context")  # the checkpoint_name tags the "names" policy keeps
REMAT_POLICIES = {  # Config.remat -> the policy of each layer's nnx.remat
    False: None,  # no remat: the layer keeps what autodiff needs
    True: None,  # recompute everything: keep only the layer's input
    "full": None,
    "dots": jax.checkpoint_policies.dots_saveable,  # keep every product's output
    "dots_no_batch": jax.checkpoint_policies.dots_with_no_batch_dims_saveable,
    "names": jax.checkpoint_policies.save_only_these_names(*SAVED_NAMES),
    "offload": jax.checkpoint_policies.save_and_offload_only_these_names(
        names_which_can_be_saved=(),
        names_which_can_be_offloaded=SAVED_NAMES,  # kept in host memory instead
        offload_src="device",
        offload_dst="pinned_host",
    ),
}
# --8<-- [end:remat-policies]


@dataclasses.dataclass(frozen=True)
class Config:
    vocab: int = 64  # distinct tokens
    d_model: int = 32  # width of the residual stream
    heads: int = 4  # query heads
    mlp: int = 128  # hidden units of each MLP
    layers: int = 2
    seq: int = 16  # tokens the model reads per example
    remat: bool | str | Callable = True  # what each layer recomputes: REMAT_POLICIES
    kv_heads: int | None = None  # key/value heads; None: one per query head
    gated: bool = False  # a SwiGLU MLP (three matrices) instead of GELU (two)
    tied: bool = False  # the output layer reuses the embedding

    def __post_init__(self):
        sizes = ("vocab", "d_model", "heads", "mlp", "layers", "seq", "kv_heads")
        for name in sizes:
            value = getattr(self, name)
            if value is None and name == "kv_heads":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, not {value!r}.")
        if not callable(self.remat) and self.remat not in REMAT_POLICIES:
            raise ValueError(
                f"remat must be True, False, one of {sorted(map(str, REMAT_POLICIES))} "
                f"or a jax.checkpoint_policies policy, not {self.remat!r}."
            )
        if self.d_model % self.heads:
            raise ValueError(
                f"heads ({self.heads}) must divide d_model ({self.d_model}): "
                f"change one of them."
            )
        if self.heads % self.kv:
            raise ValueError(
                f"kv_heads ({self.kv}) must divide heads ({self.heads}), so that "
                f"each key/value head serves the same number of query heads."
            )

    @property
    def kv(self) -> int:
        """Key/value heads: `heads` for multi-head attention, fewer for grouped-query."""
        return self.heads if self.kv_heads is None else self.kv_heads

    @property
    def head_dim(self) -> int:
        return self.d_model // self.heads


# --8<-- [end:config]


# --8<-- [start:param-count]
def param_count(cfg: Config) -> int:
    """How many numbers the model learns, by formula."""
    d, k = cfg.d_model, cfg.head_dim
    attention = d * cfg.heads * k + 2 * d * cfg.kv * k + cfg.heads * k * d  # q, kv, out
    mlp = (3 if cfg.gated else 2) * d * cfg.mlp  # gate (if gated), up, down
    per_layer = attention + mlp + 2 * d  # and two norm scales
    embeddings = (1 if cfg.tied else 2) * cfg.vocab * d  # embed, and head unless tied
    return embeddings + cfg.layers * per_layer + d  # and the final norm


# --8<-- [end:param-count]


# --8<-- [start:rules]
RULES = (  # logical axis -> mesh axes
    ("batch", ("data", "fsdp")),  # the examples: split over both data axes
    ("embed", "fsdp"),  # the model width of every weight: FSDP
    ("vocab", "tensor"),  # the rest of each weight: tensor parallel
    ("heads", "tensor"),
    ("kv_heads", "tensor"),  # key/value heads go with their query heads
    ("mlp", "tensor"),
    ("head_dim", None),  # within a head: whole
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
        d, h, g, k, m = cfg.d_model, cfg.heads, cfg.kv, cfg.head_dim, cfg.mlp
        ones = nnx.initializers.ones
        self.attn_norm = param(rngs, (d,), ("embed",), ones)
        self.q = param(rngs, (d, h, k), ("embed", "heads", "head_dim"))
        self.kv = param(rngs, (2, d, g, k), (None, "embed", "kv_heads", "head_dim"))
        self.out = param(rngs, (h, k, d), ("heads", "head_dim", "embed"))
        self.mlp_norm = param(rngs, (d,), ("embed",), ones)
        if cfg.gated:
            self.gate = param(rngs, (d, m), ("embed", "mlp"))
        self.up = param(rngs, (d, m), ("embed", "mlp"))
        self.down = param(rngs, (m, d), ("mlp", "embed"))
        self.gated = cfg.gated

    def __call__(self, x):  # x: (batch, seq, d_model) float32
        h = rms_norm(x, use(self.attn_norm, jnp.float32)).astype(jnp.bfloat16)
        q = checkpoint_name(jnp.einsum("bsd,dhk->bshk", h, use(self.q)), "qkv")
        kv = checkpoint_name(jnp.einsum("bsd,cdgk->cbsgk", h, use(self.kv)), "qkv")
        k, v = kv
        if k.shape[2] == 1:  # (2)!
            k, v = (constrain(t, "batch", None, None, "head_dim") for t in (k, v))
        context = jax.nn.dot_product_attention(q, k, v, is_causal=True)  # (1)!
        context = checkpoint_name(context, "context")
        by_example = summed_out("batch", None, None)
        x = x + jnp.einsum(
            "bshk,hkd->bsd", context, use(self.out), out_sharding=by_example
        )
        x = constrain(x, "batch", None, None)

        h = rms_norm(x, use(self.mlp_norm, jnp.float32)).astype(jnp.bfloat16)
        if self.gated:  # SwiGLU
            hidden = jax.nn.silu(h @ use(self.gate)) * (h @ use(self.up))
        else:
            hidden = jax.nn.gelu(h @ use(self.up))
        hidden = constrain(hidden, "batch", None, "mlp")
        x = x + jnp.matmul(hidden, use(self.down), out_sharding=by_example)
        return constrain(x, "batch", None, None)


# --8<-- [end:block]


# --8<-- [start:transformer]
class Transformer(nnx.Module):
    """Token embedding, `cfg.layers` blocks, a final norm and the output head."""

    def __init__(self, cfg: Config, *, rngs: nnx.Rngs):
        self.embed = param(rngs, (cfg.vocab, cfg.d_model), ("vocab", "embed"))

        @nnx.split_rngs(splits=cfg.layers)  # (1)!
        @nnx.vmap(transform_metadata={nnx.PARTITION_NAME: "layers"})
        def stack(rngs):
            return Block(cfg, rngs=rngs)

        self.layers = stack(rngs)
        ones = nnx.initializers.ones
        self.final_norm = param(rngs, (cfg.d_model,), ("embed",), ones)
        if not cfg.tied:
            self.head = param(rngs, (cfg.d_model, cfg.vocab), ("embed", "vocab"))
        self.tied, self.remat = cfg.tied, cfg.remat

    def __call__(self, tokens):  # (batch, seq) int32 -> (batch, seq, vocab)
        by_example = summed_out("batch", None, None)
        x = use(self.embed, jnp.float32).at[tokens].get(out_sharding=by_example)
        x = constrain(x, "batch", None, None)

        def layer(x, block):
            return block(x)

        if self.remat is True:
            layer = nnx.remat(layer)  # (2)!
        elif self.remat is not False:
            policy = REMAT_POLICIES.get(self.remat, self.remat)
            layer = nnx.remat(layer, policy=policy)
        over_layers = nnx.scan(  # (3)!
            layer,
            in_axes=(nnx.Carry, 0),
            out_axes=nnx.Carry,
            transform_metadata={nnx.PARTITION_NAME: "layers"},
        )
        x = over_layers(x, self.layers)
        h = rms_norm(x, use(self.final_norm, jnp.float32)).astype(jnp.bfloat16)
        head = use(self.embed).T if self.tied else use(self.head)  # (4)!
        return (h @ head).astype(jnp.float32)  # (5)!


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
