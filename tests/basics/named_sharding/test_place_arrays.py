import jax
import numpy as np
import pytest
from jax import P
from jax.sharding import AxisType, NamedSharding, SingleDeviceSharding

from snippets.basics.named_sharding import place_arrays


@pytest.fixture
def x():
    return place_arrays.unplaced_array()


def test_three_explicit_meshes_over_the_same_eight_devices(devices):
    meshes = place_arrays.build_meshes()
    assert [dict(m.shape) for m in meshes] == [
        {"x": 8},
        {"x": 2, "y": 4},
        {"x": 4, "y": 2},
    ]
    for mesh in meshes:
        assert set(mesh.axis_types) == {AxisType.Explicit}
        assert sorted(mesh.device_ids.ravel()) == [d.id for d in devices]


def test_an_unplaced_array_is_whole_on_device_0(devices, capsys):
    x = place_arrays.unplaced_array()
    assert isinstance(x.sharding, SingleDeviceSharding)
    assert x.devices() == {devices[0]}
    assert x.shape == (8, 4) and x.dtype == np.float32
    assert [s.data.shape for s in x.addressable_shards] == [(8, 4)]
    assert capsys.readouterr().out.splitlines() == [
        "SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)",
        "devices: {CpuDevice(id=0)}",
    ]


def test_device_put_splits_rows_over_x_and_leaves_the_input_alone(
    x, line_mesh, devices
):
    by_rows, x_rows = place_arrays.put_on_mesh(x, line_mesh)
    assert by_rows == NamedSharding(line_mesh, P("x"))
    assert x_rows.sharding == by_rows
    assert x_rows.devices() == set(devices)
    assert [s.data.shape for s in x_rows.addressable_shards] == [(1, 4)] * 8
    np.testing.assert_array_equal(x_rows, np.arange(32.0).reshape(8, 4))
    assert isinstance(x.sharding, SingleDeviceSharding)


def test_numpy_and_jax_inputs_give_the_same_placed_array(x, line_mesh, capsys):
    by_rows, x_rows = place_arrays.put_on_mesh(x, line_mesh)
    from_host = place_arrays.put_numpy(by_rows, x_rows)
    assert isinstance(from_host, jax.Array)
    assert from_host.sharding == x_rows.sharding
    assert from_host.dtype == np.float32
    for a, b in zip(
        from_host.addressable_shards, x_rows.addressable_shards, strict=True
    ):
        assert a.device == b.device and a.index == b.index
        np.testing.assert_array_equal(a.data, b.data)
    out = capsys.readouterr().out
    assert "same sharding: True" in out and "same values:   True" in out


def test_sharding_spec_mesh_and_global_shape(x, line_mesh, capsys):
    _, x_rows = place_arrays.put_on_mesh(x, line_mesh)
    capsys.readouterr()
    place_arrays.inspect_sharding(x_rows)
    assert x_rows.sharding.spec == P("x")
    assert x_rows.sharding.mesh == line_mesh
    assert capsys.readouterr().out.splitlines() == [
        "spec:  P('x',)",
        "mesh:  Mesh('x': 8, axis_types=(Explicit,))",
        "shape: (8, 4)",
    ]


def test_a_dimension_that_does_not_divide_is_refused(line_mesh, capsys):
    place_arrays.uneven_split(line_mesh)
    out = capsys.readouterr().out
    assert out.startswith(
        "ValueError: Sharding spec ('x',) implies that array axis 0 is partitioned "
        "8 times, but does not evenly divide the dimension size 6."
    )
