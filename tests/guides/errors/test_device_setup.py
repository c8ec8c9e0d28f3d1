import jax
import numpy as np
import pytest
from jax.sharding import AxisType

from snippets.guides.errors import device_setup


def test_changing_the_count_after_start_is_a_runtime_error(devices, capsys):
    device_setup.too_late()
    assert capsys.readouterr().out == (
        "devices: 8\n"
        "RuntimeError: jax_num_cpu_devices config should be updated before backends are "
        "initialized i.e. before any JAX operation is executed. You should initialize "
        "this config immediately after `import jax`.\n"
    )
    assert jax.device_count() == 8
    with pytest.raises(RuntimeError, match="before backends are initialized"):
        jax.config.update("jax_num_cpu_devices", 2)


def test_the_count_is_fixed_at_eight_and_setting_eight_again_is_accepted(
    devices, capsys
):
    assert device_setup.count_is_fixed() == 8
    assert capsys.readouterr().out == ("jax_num_cpu_devices: 8\ndevices: 8 {'cpu'}\n")


def test_a_mesh_larger_than_the_devices(devices, capsys):
    device_setup.mesh_too_large()
    assert capsys.readouterr().out == (
        "ValueError: Number of devices 8 must be >= the product of mesh_shape (4, 4)\n"
    )


def test_a_smaller_mesh_silently_takes_the_first_devices(devices):
    small = jax.make_mesh((2, 2), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)
    np.testing.assert_array_equal(small.device_ids, [[0, 1], [2, 3]])


def test_meshes_that_fit(devices, capsys):
    mesh, line, quarter = device_setup.meshes_that_fit()
    assert dict(mesh.shape) == {"x": 2, "y": 4}
    assert dict(line.shape) == {"x": 8}
    assert dict(quarter.shape) == {"x": 2, "y": 2}
    for m in (mesh, line, quarter):
        assert set(m.axis_types) == {AxisType.Explicit}
    np.testing.assert_array_equal(quarter.device_ids.ravel(), [0, 1, 2, 3])
    assert capsys.readouterr().out.splitlines() == [
        "{'x': 2, 'y': 4} on devices [0, 1, 2, 3, 4, 5, 6, 7]",
        "{'x': 8} on devices [0, 1, 2, 3, 4, 5, 6, 7]",
        "{'x': 2, 'y': 2} on devices [0, 1, 2, 3]",
        "ValueError: mesh shape (4, 4) needs 16 devices and this program has 8: "
        "choose sizes whose product is 8.",
    ]


@pytest.mark.parametrize(
    ("shape", "names", "message"),
    [
        (
            (2, 2),
            ("x", "y"),
            r"mesh shape \(2, 2\) needs 4 devices and this program has 8",
        ),
        ((16,), ("x",), r"mesh shape \(16,\) needs 16 devices"),
        ((2, 4), ("x",), r"2 axis sizes \(2, 4\) but 1 names \('x',\)"),
    ],
)
def test_mesh_for_all_devices_refuses_what_does_not_fill_the_machine(
    devices, shape, names, message
):
    with pytest.raises(ValueError, match=message):
        device_setup.mesh_for_all_devices(shape, names)


def test_mesh_for_all_devices_accepts_lists(devices):
    mesh = device_setup.mesh_for_all_devices([4, 2], ["a", "b"])
    assert dict(mesh.shape) == {"a": 4, "b": 2}
