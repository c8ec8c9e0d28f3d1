import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from jax import P
from jax.sharding import AxisType

from snippets import models
from snippets.training.sharding_parameters import path_rules

EXPECTED = {  # parameter: (spec, shape one device holds)
    ("down", "bias"): (P(), (8,)),
    ("down", "kernel"): (P("model", None), (32, 8)),
    ("up", "bias"): (P("model"), (32,)),
    ("up", "kernel"): (P(None, "model"), (32, 32)),
}


def table_rows(text):
    """The cells of each body row of a rich table printed without a terminal."""
    return [
        [cell.strip() for cell in line.strip("│").split("│")]
        for line in text.splitlines()
        if line.startswith("│")
    ]


def test_the_mesh_is_2_by_4_with_auto_axes(run):
    assert dict(run.mesh.shape) == {"data": 2, "model": 4}
    assert run.mesh.axis_types == (AxisType.Auto, AxisType.Auto)
    assert run.mesh_out == "Mesh('data': 2, 'model': 4, axis_types=(Auto, Auto))\n"


def test_the_rules_split_up_by_columns_and_down_by_rows(run):
    fresh = models.MLP(models.D_IN, models.D_HIDDEN, models.D_OUT, rngs=nnx.Rngs(0))
    for (layer, kind), (spec, per_device) in EXPECTED.items():
        value = getattr(getattr(run.model, layer), kind)[...]
        assert value.sharding.spec == spec
        assert value.sharding.mesh == run.mesh
        whole = np.asarray(getattr(getattr(fresh, layer), kind)[...])
        np.testing.assert_array_equal(value, whole)  # placed, not changed
        for shard in value.addressable_shards:
            assert shard.data.shape == per_device
            np.testing.assert_array_equal(shard.data, whole[shard.index])


def test_the_table_shows_spec_and_per_device_shape(run):
    assert run.model_out.splitlines()[0].strip() == "MLP, sharded by path rules"
    assert table_rows(run.model_out) == [
        ["down/bias", "(8,)", "P()", "(8,)"],
        ["down/kernel", "(128, 8)", "P('model', None)", "(32, 8)"],
        ["up/bias", "(128,)", "P('model',)", "(32,)"],
        ["up/kernel", "(32, 128)", "P(None, 'model')", "(32, 32)"],
    ]


def test_an_unplaced_model_shows_one_device(capsys):
    small = models.MLP(models.D_IN, models.D_HIDDEN, models.D_OUT, rngs=nnx.Rngs(0))
    path_rules.show_params(nnx.state(small), "unplaced")
    rows = table_rows(capsys.readouterr().out)
    assert [row[2] for row in rows] == ["one device"] * 4
    assert rows[3] == ["up/kernel", "(32, 128)", "one device", "(32, 128)"]


def test_a_hidden_size_that_does_not_divide_is_refused(run, capsys):
    path_rules.bad_hidden_size(run.mesh)
    assert capsys.readouterr().out == (
        "ValueError: up/kernel has shape (32, 90): dimension 1 (90) does not split "
        "over the 4 devices of mesh axis 'model'. Make it a multiple of 4, or change "
        "the rule for up/kernel.\n"
    )


def test_a_rule_naming_a_missing_axis_is_refused(mesh):
    with pytest.raises(ValueError, match=re.escape("which this mesh does not have")):
        path_rules.param_spec("up/kernel", (32, 128), mesh)  # axes "x", "y"


def test_a_rule_longer_than_the_shape_is_refused(run):
    with pytest.raises(ValueError, match=r"up/kernel: rule .* has more entries"):
        path_rules.param_spec("up/kernel", (32,), run.mesh)


def test_parameters_without_a_rule_are_replicated(run):
    assert path_rules.param_spec("down/bias", (8,), run.mesh) == P()
    assert path_rules.param_spec("anything/else", (3, 5), run.mesh) == P()


def test_shard_by_path_checks_every_parameter_before_moving_any(run):
    # eval_shape builds the model's shapes without computing any values.
    odd = nnx.eval_shape(
        lambda: models.MLP(models.D_IN, 90, models.D_OUT, rngs=nnx.Rngs(0))
    )
    with pytest.raises(ValueError, match=r"down/kernel has shape \(90, 8\)"):
        path_rules.shard_by_path(odd, run.mesh)


def test_on_explicit_axes_the_mlp_needs_out_sharding(devices):
    """The page's note: the down projection's contraction is ambiguous on Explicit."""
    explicit = (AxisType.Explicit, AxisType.Explicit)
    mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=explicit)
    model = models.MLP(models.D_IN, models.D_HIDDEN, models.D_OUT, rngs=nnx.Rngs(0))
    path_rules.shard_by_path(model, mesh)
    x = jax.device_put(jnp.ones((8, models.D_IN)), jax.NamedSharding(mesh, P("data")))
    with pytest.raises(Exception, match="Contracting dimensions are sharded") as err:
        nnx.jit(lambda m, x: m(x))(model, x)
    assert type(err.value).__name__ == "ShardingTypeError"
    assert "rhs_contracting_spec=('model',)" in str(err.value)
