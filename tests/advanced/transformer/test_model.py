import dataclasses

import pytest
from flax import nnx
from jax import P

from snippets.advanced.transformer.model import RULES, Config, Transformer, mesh_axes


def abstract_model(cfg: Config):
    with nnx.use_eager_sharding(False):
        return nnx.eval_shape(lambda: Transformer(cfg, rngs=nnx.Rngs(0)))


def test_the_rules_map_logical_names_to_mesh_axes():
    assert mesh_axes(("embed", "mlp")) == P("fsdp", "tensor")
    assert mesh_axes(("batch", None, "vocab")) == P(("data", "fsdp"), None, "tensor")
    assert mesh_axes(("layers", "heads", "head_dim", "embed")) == P(
        None, "tensor", None, "fsdp"
    )
    assert mesh_axes(()) == P()


def test_an_unknown_logical_axis_is_refused_with_what_to_add():
    with pytest.raises(ValueError, match=r"No rule for the logical axis 'embd': add"):
        mesh_axes(("embd", "mlp"))
    no_mlp = tuple(rule for rule in RULES if rule[0] != "mlp")
    with pytest.raises(ValueError, match=r"logical axis 'mlp'.*which know \['batch'"):
        mesh_axes(("embed", "mlp"), no_mlp)


def test_a_width_that_heads_do_not_divide_is_refused():
    with pytest.raises(
        ValueError,
        match=r"^heads \(4\) must divide d_model \(30\): change one of them\.$",
    ):
        dataclasses.replace(Config(), d_model=30)


def test_the_layers_are_stacked_along_a_leading_layers_axis():
    cfg = Config()
    model = abstract_model(cfg)
    layers = model.layers
    head_dim = cfg.d_model // cfg.heads
    assert layers.q.shape == (cfg.layers, cfg.d_model, cfg.heads, head_dim)
    assert layers.kv.shape == (cfg.layers, 2, cfg.d_model, cfg.heads, head_dim)
    assert layers.up.shape == (cfg.layers, cfg.d_model, cfg.mlp)
    names = {
        ".".join(map(str, path)): node.get_metadata()["out_sharding"]
        for path, node in nnx.iter_graph(model)
        if isinstance(node, nnx.Param)
    }
    assert names == {
        "embed": ("vocab", "embed"),
        "final_norm": ("embed",),
        "head": ("embed", "vocab"),
        "layers.attn_norm": ("layers", "embed"),
        "layers.q": ("layers", "embed", "heads", "head_dim"),
        "layers.kv": ("layers", None, "embed", "kv_heads", "head_dim"),
        "layers.out": ("layers", "heads", "head_dim", "embed"),
        "layers.mlp_norm": ("layers", "embed"),
        "layers.up": ("layers", "embed", "mlp"),
        "layers.down": ("layers", "mlp", "embed"),
    }
    # Every parameter has one name per dimension, the stacked axis included.
    for path, node in nnx.iter_graph(model):
        if isinstance(node, nnx.Param):
            assert len(node.get_metadata()["out_sharding"]) == node.ndim, path
