"""Layouts that cannot work are refused before anything is created, with what to change."""

import dataclasses

import jax
import pytest
from flax import nnx

from snippets.advanced.transformer.init import build_mesh, sharded_init
from snippets.advanced.transformer.model import RULES
from snippets.advanced.transformer.step import gradients, shard_batch, token_batches


def test_three_heads_do_not_split_over_a_tensor_axis_of_two(cfg, mesh):
    # Key/value heads divide the query heads, so whenever the heads do not split, neither
    # do the key/value heads: the first variable refused is layers.kv.
    three_heads = dataclasses.replace(cfg, heads=3, d_model=48)
    with pytest.raises(
        ValueError,
        match=r"^model\.layers\.kv \('layers', None, 'embed', 'kv_heads', 'head_dim'\): "
        r"its 'kv_heads' dimension of 3 does not split 2 ways over \('tensor',\): make "
        r"'kv_heads' a multiple of 2, or give it a smaller mesh axis in the rules\.$",
    ):
        sharded_init(three_heads, mesh)


def test_one_key_value_head_does_not_split_over_a_tensor_axis_of_two(cfg, mesh):
    multi_query = dataclasses.replace(cfg, kv_heads=1)
    with pytest.raises(
        ValueError,
        match=r"^model\.layers\.kv \(.*\): its 'kv_heads' dimension of 1 does not "
        r"split 2 ways over \('tensor',\): make 'kv_heads' a multiple of 2",
    ):
        sharded_init(multi_query, mesh)
    # On a mesh without a tensor split, the same model is accepted.
    sharded_init(multi_query, build_mesh((2, 4, 1)))


def test_a_vocabulary_that_does_not_split_names_the_embedding(cfg, mesh):
    with pytest.raises(
        ValueError,
        match=r"^model\.embed \('vocab', 'embed'\): its 'vocab' dimension of 63 does "
        r"not split 2 ways over \('tensor',\)",
    ):
        sharded_init(dataclasses.replace(cfg, vocab=63), mesh)


def test_a_rules_table_without_mlp_is_refused_naming_the_variable(cfg, mesh):
    no_mlp = tuple(rule for rule in RULES if rule[0] != "mlp")
    with pytest.raises(
        ValueError,
        match=r"^model\.layers\.down \('layers', 'mlp', 'embed'\): No rule for the "
        r"logical axis 'mlp': add \('mlp', <mesh axis or None>\) to the rules, which "
        r"know \['batch', 'embed', 'head_dim', 'heads', 'kv_heads', 'layers', 'vocab'\]\.$",
    ):
        sharded_init(cfg, mesh, rules=no_mlp)


def test_a_rule_to_an_axis_the_mesh_lacks_is_refused(cfg, mesh):
    model_axis = tuple((n, "model" if n == "mlp" else a) for n, a in RULES)
    with pytest.raises(
        ValueError,
        match=r"^model\.layers\.down \('layers', 'mlp', 'embed'\): Resource axis: model "
        r"of P\(None, 'model', 'fsdp'\) is not found in mesh",
    ):
        sharded_init(cfg, mesh, rules=model_axis)


def test_batches_that_do_not_split_are_refused(cfg, mesh):
    tokens = token_batches(cfg, steps=1, batch=8)[0]
    with pytest.raises(
        ValueError,
        match=r"^A batch of 6 does not split into 1 microbatch\(es\) over "
        r"\('data', 'fsdp'\): make it a multiple of 4\.$",
    ):
        shard_batch(tokens[:6], mesh)
    with pytest.raises(
        ValueError,
        match=r"^A batch of 8 does not split into 4 microbatch\(es\) over "
        r"\('data', 'fsdp'\): make it a multiple of 16\.$",
    ):
        shard_batch(tokens, mesh, microbatches=4)


def test_gradients_refuse_microbatches_that_do_not_divide_the_batch(sharded):
    tokens = jax.ShapeDtypeStruct((8, 17), "int32")
    model = nnx.merge(sharded.graphdef, sharded.abstract).model
    with pytest.raises(ValueError, match=r"^Make the batch of 8 a multiple of 3\."):
        jax.eval_shape(lambda t: gradients(model, t, microbatches=3), tokens)
