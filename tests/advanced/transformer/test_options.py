"""Grouped-query attention, SwiGLU and tied embeddings: split over the mesh, on both kinds of
axes, they compute what the model computes on one device, and the state formula holds."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from jax.sharding import AxisType

from snippets.advanced.transformer.init import build_mesh, sharded_init
from snippets.advanced.transformer.memory import state_bytes
from snippets.advanced.transformer.model import Config
from snippets.advanced.transformer.step import (
    make_train_step,
    shard_batch,
    token_batches,
    train,
)

OPTIONS = {
    "gqa": Config(heads=8, kv_heads=2),
    "gqa-swiglu-tied": Config(kv_heads=2, gated=True, tied=True),
    "mqa-swiglu": Config(kv_heads=1, gated=True),
}
MESHES = {"gqa": (2, 2, 2), "gqa-swiglu-tied": (2, 2, 2), "mqa-swiglu": (2, 4, 1)}
# Every push runs the model with all three options at once; the others run daily (each
# compiles a model of its own: together about 20 s of the per-push run on two cores).
EVERY_PUSH = "gqa-swiglu-tied"


def every_option():
    return [
        pytest.param(n, marks=() if n == EVERY_PUSH else pytest.mark.daily)
        for n in OPTIONS
    ]


def logits_on(cfg, shape, kind, start, tokens):
    """The model's logits for `tokens` on a mesh of `shape`, from the values `start`."""
    mesh = build_mesh(shape, kind)
    sharded = sharded_init(cfg, mesh)
    state = jax.device_put(start, sharded.shardings)

    @jax.jit
    def forward(state, tokens):
        with jax.sharding.use_abstract_mesh(mesh.abstract_mesh):
            return nnx.merge(sharded.graphdef, state).model(tokens)

    out = forward(state, shard_batch(tokens, mesh))
    return out, state


@pytest.mark.parametrize("kind", [AxisType.Auto, AxisType.Explicit], ids=str)
@pytest.mark.parametrize("name", every_option())
def test_the_split_model_computes_the_one_device_logits(devices, name, kind):
    cfg = OPTIONS[name]
    start = jax.device_get(sharded_init(cfg, build_mesh(MESHES[name])).init())
    tokens = token_batches(cfg, steps=1, batch=8)[0][:, :-1]
    split, state = logits_on(cfg, MESHES[name], kind, start, tokens)
    alone, _ = logits_on(cfg, (1, 1, 1), kind, start, tokens)
    assert split.shape == (8, cfg.seq, cfg.vocab) and split.dtype == jnp.float32
    # bfloat16 products summed in another order: within a few units of its rounding.
    np.testing.assert_allclose(split, alone, rtol=2e-2, atol=2e-3)
    model = state["model"]
    kv = model["layers"]["kv"][...]
    assert kv.shape == (cfg.layers, 2, cfg.d_model, cfg.kv, cfg.head_dim)
    assert ("head" in model) == (not cfg.tied)
    assert ("gate" in model["layers"]) == cfg.gated


def test_attention_with_fewer_kv_heads_is_grouped_query_attention(devices):
    """JAX's attention, given 2 key/value heads for 8 query heads, lets query head i use
    key/value head i // 4: the same as repeating each key/value head 4 times."""
    ks = jax.random.split(jax.random.key(0), 3)
    q = jax.random.normal(ks[0], (2, 16, 8, 8))
    k, v = (jax.random.normal(key, (2, 16, 2, 8)) for key in ks[1:])
    grouped = jax.nn.dot_product_attention(q, k, v, is_causal=True)
    repeated = jax.nn.dot_product_attention(
        q, jnp.repeat(k, 4, axis=2), jnp.repeat(v, 4, axis=2), is_causal=True
    )
    np.testing.assert_allclose(grouped, repeated, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kind", [AxisType.Auto, AxisType.Explicit], ids=str)
def test_training_with_every_option_matches_one_device(devices, kind):
    cfg = OPTIONS["gqa-swiglu-tied"]
    mesh, one = build_mesh(kind=kind), build_mesh((1, 1, 1), kind)
    sharded, alone = sharded_init(cfg, mesh), sharded_init(cfg, one)
    start = jax.device_get(sharded_init(cfg, build_mesh()).init())
    batches = token_batches(cfg, steps=3, batch=8)
    _, losses = train(
        make_train_step(sharded, mesh),
        jax.device_put(start, sharded.shardings),
        [shard_batch(t, mesh) for t in batches],
    )
    _, losses_alone = train(
        make_train_step(alone, one),
        jax.device_put(start, alone.shardings),
        [shard_batch(t, one) for t in batches],
    )
    np.testing.assert_allclose(losses, losses_alone, rtol=2e-3)
    assert losses[-1] < losses[0]


@pytest.mark.parametrize("name", every_option())
def test_the_state_formula_is_exact_for_every_option(devices, name):
    """state_bytes against the compiled step's memory_analysis(), as the page's table."""
    cfg = OPTIONS[name]
    mesh = build_mesh(MESHES[name])
    sharded = sharded_init(cfg, mesh)
    tokens = shard_batch(token_batches(cfg, steps=1, batch=8)[0], mesh)
    spec = jax.ShapeDtypeStruct(tokens.shape, tokens.dtype, sharding=tokens.sharding)
    compiled = make_train_step(sharded, mesh).lower(sharded.abstract, spec).compile()
    m = compiled.memory_analysis()
    token_bytes = 4 * math.prod(tokens.sharding.shard_shape(tokens.shape))
    assert m.argument_size_in_bytes - token_bytes == state_bytes(cfg, mesh)
    assert m.alias_size_in_bytes == state_bytes(cfg, mesh)
    share = sum(
        math.prod(a.sharding.shard_shape(a.shape)) * a.dtype.itemsize
        for a in jax.tree.leaves(sharded.abstract)
    )
    assert share == state_bytes(cfg, mesh)


def test_explicit_attention_refuses_one_kv_head_that_names_the_tensor_axis(devices):
    """Why Block drops the name of a single key/value head (the page's annotation)."""
    from snippets.advanced.transformer.model import mesh_axes

    mesh = build_mesh((1, 1, 1), AxisType.Explicit)
    with jax.set_mesh(mesh):
        names = mesh_axes(("batch", None, "heads", "head_dim"))
        q = jnp.zeros((2, 16, 4, 8), jnp.bfloat16, out_sharding=names)
        k = jnp.zeros((2, 16, 1, 8), jnp.bfloat16, out_sharding=names)
        with pytest.raises(
            ValueError, match="Unmapped values passed to vmap cannot be"
        ):
            jax.nn.dot_product_attention(q, k, k, is_causal=True)
        whole = mesh_axes(("batch", None, None, "head_dim"))
        k = jax.reshard(k, whole)
        assert jax.nn.dot_product_attention(q, k, k, is_causal=True).shape == q.shape
