import importlib
import inspect
import warnings

import jax
import numpy as np
import pytest
from jax import P
from jax.sharding import AxisType, Mesh

from snippets.guides.migration import meshes

DOUBLED = 2 * np.arange(8.0)
MESH_CONTEXT_MESSAGE = (
    "`with mesh:` context manager has been deprecated. "
    "Please use `with jax.set_mesh(mesh):` instead."
)


@pytest.fixture
def old_mesh(devices):
    return Mesh(np.array(devices), ("x",))


@pytest.fixture
def values(devices):
    return jax.numpy.arange(8.0)


@pytest.fixture
def double_on_x(values):
    _, double_on_x = meshes.default_axis_types(values)
    return double_on_x


def test_mesh_utils_still_runs_silently_and_gives_auto_axes(capsys):
    grid_mesh, caught = meshes.old_device_mesh()
    assert caught == []
    assert dict(grid_mesh.shape) == {"data": 2, "model": 4}
    assert grid_mesh.axis_types == (AxisType.Auto, AxisType.Auto)
    assert capsys.readouterr().out.splitlines()[0] == "warnings: 0"


def test_make_mesh_gives_the_same_grid_with_the_axis_types_asked_for(capsys):
    grid_mesh, _ = meshes.old_device_mesh()
    mesh_2d = meshes.new_device_mesh(grid_mesh)
    np.testing.assert_array_equal(mesh_2d.device_ids, grid_mesh.device_ids)
    assert mesh_2d.axis_types == (AxisType.Explicit, AxisType.Explicit)
    assert capsys.readouterr().out.splitlines()[-1] == "same device grid: True"


def test_make_mesh_defaults_to_explicit_and_with_sharding_constraint_asserts(
    values, capsys
):
    unspelled, double_on_x = meshes.default_axis_types(values)
    assert unspelled.axis_types == (AxisType.Explicit,)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "axis types: (Explicit,)"
    assert out[1].startswith(
        "AssertionError: `with_sharding_constraint` acts as an assert when all axes "
        "of mesh are of type `Explicit`. The array sharding: P(None,) did not match "
        "the sharding provided: P('x',)."
    )
    with jax.set_mesh(unspelled), pytest.raises(AssertionError):
        jax.jit(double_on_x)(values)


def test_either_axis_type_spelled_out_gives_the_values(line_mesh, values, double_on_x):
    doubled_auto, doubled_explicit = meshes.spelled_out_axis_types(
        line_mesh, values, double_on_x
    )
    for doubled in (doubled_auto, doubled_explicit):
        np.testing.assert_array_equal(doubled, DOUBLED)
        assert doubled.sharding.spec == P("x")
    assert doubled_auto.sharding.mesh.axis_types == (AxisType.Auto,)
    assert str(jax.typeof(doubled_explicit)) == "float32[8@x]"


def test_with_mesh_warns_and_still_works(old_mesh, values, double_on_x, capsys):
    doubled_old, caught = meshes.old_mesh_context(old_mesh, values, double_on_x)
    assert [(w.category, str(w.message)) for w in caught] == [
        (DeprecationWarning, MESH_CONTEXT_MESSAGE)
    ]
    np.testing.assert_array_equal(doubled_old, DOUBLED)
    assert doubled_old.sharding.spec == P("x")
    assert capsys.readouterr().out.splitlines()[0] == (
        f"DeprecationWarning: {MESH_CONTEXT_MESSAGE}"
    )
    with (
        pytest.warns(DeprecationWarning, match="`with mesh:` context manager"),
        old_mesh,
    ):
        pass


def test_set_mesh_gives_the_same_values_and_scopes_the_mesh(
    old_mesh, values, double_on_x, capsys
):
    doubled = meshes.new_mesh_context(old_mesh, values, double_on_x)
    np.testing.assert_array_equal(doubled, DOUBLED)
    assert doubled.sharding.spec == P("x")
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("inside:  AbstractMesh('x': 8, axis_types=(Auto,)")
    assert out[1] == "outside: AbstractMesh((), axis_types=())"


def test_set_mesh_does_not_warn(old_mesh):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with jax.set_mesh(old_mesh):
            pass


def test_use_mesh_and_experimental_shard_are_gone(line_mesh, values, capsys):
    meshes.removed_mesh_apis(line_mesh, values)
    assert capsys.readouterr().out.splitlines() == [
        "AttributeError: module 'jax.sharding' has no attribute 'use_mesh'",
        "ModuleNotFoundError: No module named 'jax.experimental.shard'",
    ]
    with pytest.raises(AttributeError):
        jax.sharding.use_mesh  # noqa: B018
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("jax.experimental.shard")


def test_set_mesh_and_jax_reshard_replace_them(line_mesh, values):
    placed = meshes.current_mesh_apis(line_mesh, values)
    np.testing.assert_array_equal(placed, np.arange(8.0))
    assert placed.sharding.spec == P("x")
    assert {s.data.shape for s in placed.addressable_shards} == {(1,)}


def test_mesh_utils_keeps_options_make_mesh_lacks():
    from jax.experimental import mesh_utils

    assert (
        "contiguous_submeshes"
        in inspect.signature(mesh_utils.create_device_mesh).parameters
    )
    assert "contiguous_submeshes" not in inspect.signature(jax.make_mesh).parameters
