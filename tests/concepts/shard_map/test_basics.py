import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import P
from jax.sharding import AxisType

from snippets.concepts.shard_map.basics import (
    eight_devices,
    one_device,
    shard_map_double,
)


@pytest.mark.parametrize("values", [[3.0, 7.0, -1.5], [], [0.25] * 13])
def test_one_device_doubles_any_1d_input(values):
    doubled = shard_map_double(jnp.asarray(values, dtype=jnp.float32))
    np.testing.assert_allclose(doubled, np.asarray(values, dtype=np.float32) * 2.0)
    assert doubled.shape == (len(values),)
    assert doubled.sharding.mesh.devices.size == 1
    assert doubled.sharding.spec == P("data")


def test_list_inputs_work_too():
    np.testing.assert_allclose(shard_map_double([3, 7]), [6.0, 14.0])


def test_one_device_example_prints_the_doubled_vector(capsys):
    doubled = one_device()
    np.testing.assert_array_equal(doubled, [2.0, 4.0, 6.0])
    assert capsys.readouterr().out.splitlines() == [
        "float32[3@data] [2. 4. 6.]",
        "devices: [CpuDevice(id=0)]",
    ]


def test_the_same_function_splits_over_eight_devices(devices, capsys):
    data_mesh, doubled = eight_devices()
    assert dict(data_mesh.shape) == {"data": 8}
    assert data_mesh.axis_types == (AxisType.Explicit,)
    np.testing.assert_array_equal(doubled, np.arange(16.0) * 2)
    assert str(jax.typeof(doubled)) == "float32[16@data]"
    assert {s.device for s in doubled.addressable_shards} == set(devices)
    assert {s.data.shape for s in doubled.addressable_shards} == {(2,)}
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == "each device holds (2,)"
    assert lines[2] == (
        "ValueError: x has 10 elements, which the 8 devices of mesh axis 'data' "
        "cannot share evenly: pad x to a multiple of 8, or use a mesh whose 'data' "
        "axis divides 10."
    )


def test_a_mesh_with_more_axes_replicates_along_the_others(mesh):
    data_model = jax.make_mesh(
        (2, 4), ("data", "model"), axis_types=(AxisType.Explicit,) * 2
    )
    doubled = shard_map_double(jnp.arange(6.0), data_model)
    np.testing.assert_array_equal(doubled, np.arange(6.0) * 2)
    assert {s.data.shape for s in doubled.addressable_shards} == {(3,)}


def test_shard_map_double_refuses_what_it_cannot_split(line_mesh):
    with pytest.raises(ValueError, match=re.escape("needs a 1-D x, not (2, 2)")):
        shard_map_double(jnp.ones((2, 2)))
    with pytest.raises(ValueError, match=re.escape("needs a 1-D x, not ()")):
        shard_map_double(1.0)
    with pytest.raises(
        ValueError,
        match=re.escape(
            "splits x over a mesh axis named 'data', but the mesh's axes are ('x',)."
        ),
    ):
        shard_map_double(jnp.arange(8.0), line_mesh)
    data_mesh = jax.make_mesh((8,), ("data",), axis_types=(AxisType.Explicit,))
    with pytest.raises(ValueError, match="pad x to a multiple of 8"):
        shard_map_double(jnp.arange(12.0), data_mesh)


def test_even_one_explicit_device_needs_the_input_placed_first():
    # Why shard_map_double calls device_put, as the page's annotation says.
    one = jax.make_mesh(
        (1,), ("data",), axis_types=(AxisType.Explicit,), devices=jax.devices()[:1]
    )
    double = jax.shard_map(
        lambda y: y * 2.0, mesh=one, in_specs=P("data"), out_specs=P("data")
    )
    with pytest.raises(
        ValueError, match=re.escape("does not match the specs of the input: P(None,)")
    ):
        double(jnp.array([1.0, 2.0, 3.0]))


def test_one_device_hides_a_wrong_collective(capsys):
    # On one device psum is the identity, so a mean divided by the block's size is right
    # there and 8 times too large on eight devices: the result depends on the mesh.
    from snippets.concepts.shard_map.basics import one_device_hides

    means = one_device_hides()
    assert float(means[1]) == 7.5 == float(np.mean(np.arange(16.0)))
    assert float(means[8]) == 60.0
    assert capsys.readouterr().out.splitlines() == [
        "1 device(s): 7.5   x.mean(): 7.5",
        "8 device(s): 60.0   x.mean(): 7.5",
    ]
