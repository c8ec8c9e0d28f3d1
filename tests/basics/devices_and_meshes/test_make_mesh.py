import jax
import numpy as np
from jax.sharding import AxisType

from snippets.basics.devices_and_meshes import make_mesh


def test_make_mesh_is_2_by_4_explicit_in_device_order(capsys):
    mesh = make_mesh.build_mesh()
    assert dict(mesh.shape) == {"data": 2, "model": 4}
    assert mesh.axis_names == ("data", "model")
    assert mesh.axis_types == (AxisType.Explicit, AxisType.Explicit)
    np.testing.assert_array_equal(mesh.device_ids, np.arange(8).reshape(2, 4))
    assert "shape: {'data': 2, 'model': 4}" in capsys.readouterr().out


def test_the_same_eight_devices_in_other_shapes():
    meshes = make_mesh.same_devices_other_shapes()
    assert {shape: dict(m.shape) for shape, m in meshes.items()} == {
        (8,): {"x": 8},
        (4, 2): {"x": 4, "y": 2},
        (2, 2, 2): {"x": 2, "y": 2, "z": 2},
    }
    for mesh in meshes.values():
        assert sorted(mesh.device_ids.ravel()) == list(range(8))
        assert set(mesh.axis_types) == {AxisType.Explicit}


def test_mesh_class_keeps_the_given_order_and_defaults_to_auto():
    classic = make_mesh.mesh_from_devices()
    np.testing.assert_array_equal(classic.device_ids, np.arange(8).reshape(2, 4))
    assert classic.axis_types == (AxisType.Auto, AxisType.Auto)


def test_constructors_disagree_on_the_default_axis_type(capsys):
    defaults = make_mesh.default_axis_types()
    assert defaults == {"jax.make_mesh": (AxisType.Explicit,), "Mesh": (AxisType.Auto,)}
    assert f"jax {jax.__version__}" in capsys.readouterr().out


def test_auto_axes_when_asked_for():
    assert make_mesh.auto_mesh().axis_types == (AxisType.Auto, AxisType.Auto)


def test_a_mesh_larger_than_the_machine_is_a_value_error(capsys):
    make_mesh.too_many_devices()
    assert capsys.readouterr().out == (
        "ValueError: Number of devices 8 must be >= the product of mesh_shape (4, 4)\n"
    )


def test_a_smaller_mesh_uses_the_devices_it_is_given():
    small = make_mesh.fewer_devices()
    assert dict(small.shape) == {"data": 2, "model": 2}
    np.testing.assert_array_equal(small.device_ids, [[0, 1], [2, 3]])
