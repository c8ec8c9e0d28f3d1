import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from jax import P

from snippets.guides.migration_flax import nnx_variables

MESH_CONTEXT_MESSAGE = (
    "`with mesh:` context manager has been deprecated. "
    "Please use `with jax.set_mesh(mesh):` instead."
)
NO_MESH_MESSAGE = (
    "An auto mesh context or metadata is required if creating a variable with "
    "annotation out_sharding=P(None, 'x')."
)


def test_an_annotated_model_under_with_mesh_warns_then_fails(line_mesh, capsys):
    _, caught = nnx_variables.old_partitioned(line_mesh)
    assert [(w.category, str(w.message)) for w in caught] == [
        (DeprecationWarning, MESH_CONTEXT_MESSAGE)
    ]
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"ValueError: {NO_MESH_MESSAGE}")
    assert out[1] == f"DeprecationWarning: {MESH_CONTEXT_MESSAGE}"
    init = nnx.with_partitioning(nnx.initializers.lecun_normal(), (None, "x"))
    with (
        pytest.warns(DeprecationWarning, match="`with mesh:`"),
        pytest.raises(ValueError, match="An auto mesh context or metadata"),
        line_mesh,
    ):
        nnx.Linear(4, 8, kernel_init=init, rngs=nnx.Rngs(0))


def test_under_set_mesh_the_kernel_is_created_split(line_mesh, capsys):
    kernel_init, _ = nnx_variables.old_partitioned(line_mesh)
    capsys.readouterr()
    layer = nnx_variables.new_partitioned(line_mesh, kernel_init)
    assert layer.kernel[...].sharding.spec == P(None, "x")
    assert {s.data.shape for s in layer.kernel[...].addressable_shards} == {(4, 1)}
    assert layer.bias[...].sharding.is_fully_replicated
    assert capsys.readouterr().out.splitlines() == [
        "kernel: float32[4,8@x]",
        "bias:   float32[8]",
    ]


def test_old_sharding_metadata_names_warn_and_still_shard(line_mesh, capsys):
    first, second, caught = nnx_variables.old_sharding_metadata(line_mesh)
    assert [(w.category, str(w.message)) for w in caught] == [
        (DeprecationWarning, "'sharding' is deprecated, use 'out_sharding' instead."),
        (
            DeprecationWarning,
            "'sharding_names' is deprecated, use 'out_sharding' instead.",
        ),
    ]
    for param in (first, second):
        assert param[...].sharding.spec == P(None, "x")
    assert capsys.readouterr().out.splitlines()[-1] == "float32[4,8@x] float32[4,8@x]"
    for name in ("sharding", "sharding_names"):
        with (
            pytest.warns(DeprecationWarning, match=f"'{name}' is deprecated"),
            jax.set_mesh(line_mesh),
        ):
            nnx.Param(jnp.ones((4, 8)), **{name: (None, "x")})


def test_out_sharding_gives_the_same_placement(line_mesh, capsys):
    first, _, _ = nnx_variables.old_sharding_metadata(line_mesh)
    capsys.readouterr()
    weight = nnx_variables.new_sharding_metadata(line_mesh)
    assert weight[...].sharding == first[...].sharding
    np.testing.assert_array_equal(weight[...], np.ones((4, 8)))
    assert capsys.readouterr().out == "float32[4,8@x] (None, 'x')\n"


def test_value_warns_on_read_and_write_and_brackets_do_not(capsys):
    model = nnx.Linear(2, 1, rngs=nnx.Rngs(0))
    bias_old, caught = nnx_variables.old_value(model)
    np.testing.assert_array_equal(bias_old, [0.0])
    assert [w.category for w in caught] == [DeprecationWarning] * 2
    assert str(caught[0].message).startswith("'.value' access is now deprecated.")
    assert str(caught[1].message).startswith("'.value' setter is now deprecated.")
    np.testing.assert_array_equal(model.bias[...], [1.0])
    bias, after = nnx_variables.new_value(model)
    np.testing.assert_array_equal(bias, [1.0])
    np.testing.assert_array_equal(after, [0.0])
    assert capsys.readouterr().out.splitlines()[-1] == "before: 1.000  after: 0.000"
    with pytest.warns(DeprecationWarning, match="'.value' access"):
        model.bias.value  # noqa: B018


def test_variable_state_is_an_alias_that_warns(capsys):
    old_class, caught = nnx_variables.old_variable_state()
    assert old_class is nnx.Variable
    assert [w.category for w in caught] == [DeprecationWarning]
    assert capsys.readouterr().out.splitlines() == [
        "DeprecationWarning: 'VariableState' was removed, this is just an alias to "
        "'Variable'. Plase use 'Variable' directly instead.",
        "True",
    ]
    with pytest.warns(DeprecationWarning, match="'VariableState' was removed"):
        nnx.VariableState  # noqa: B018
