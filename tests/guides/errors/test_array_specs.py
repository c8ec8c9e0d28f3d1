import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import P
from jax.sharding import NamedSharding

from snippets.guides.errors import array_specs


def test_six_rows_over_eight_devices(line_mesh, capsys):
    rows = array_specs.indivisible(line_mesh)
    np.testing.assert_array_equal(rows, np.arange(6.0))
    device_put_error, shard_map_error = capsys.readouterr().out.split("\n\n", 1)
    assert device_put_error.startswith(
        "ValueError: Sharding spec ('x',) implies that array axis 0 is partitioned 8 "
        "times, but does not evenly divide the dimension size 6."
    )
    assert shard_map_error.startswith(
        "ValueError: shard_map applied to the function '<lambda>' was given argument "
        "arrays with axis sizes that are not evenly divisible"
    )
    assert "but 8 does not evenly divide 6" in shard_map_error


def test_pad_to_multiple_pads_splits_and_masks(line_mesh, mesh):
    padded, real = array_specs.pad_to_multiple(jnp.arange(6.0), line_mesh, "x")
    np.testing.assert_array_equal(padded, [0, 1, 2, 3, 4, 5, 0, 0])
    np.testing.assert_array_equal(real, [True] * 6 + [False] * 2)
    assert padded.sharding.spec == P("x") and real.sharding.spec == P("x")
    grid, grid_real = array_specs.pad_to_multiple(jnp.ones((3, 5)), mesh, "x")
    assert grid.shape == (4, 5) and grid.sharding.spec == P("x")
    np.testing.assert_array_equal(grid_real, [True, True, True, False])
    exact, exact_real = array_specs.pad_to_multiple(jnp.ones(8), line_mesh, "x")
    assert exact.shape == (8,) and bool(exact_real.all())


def test_pad_to_multiple_checks_its_arguments(line_mesh):
    with pytest.raises(
        ValueError, match=r"the mesh has no axis 'y'; its axes are \('x',\)"
    ):
        array_specs.pad_to_multiple(jnp.ones(6), line_mesh, "y")
    with pytest.raises(
        ValueError, match="a scalar has no rows; pass an array of rank >= 1"
    ):
        array_specs.pad_to_multiple(jnp.float32(1.0), line_mesh, "x")


def test_the_padded_rows_go_through_shard_map_and_the_mask_drops_them(
    line_mesh, capsys
):
    padded, real, doubled = array_specs.padded_fix(line_mesh, jnp.arange(6.0))
    np.testing.assert_array_equal(padded, np.pad(np.arange(6.0), (0, 2)))
    np.testing.assert_array_equal(real, np.arange(8) < 6)
    np.testing.assert_array_equal(doubled, 2 * np.pad(np.arange(6.0), (0, 2)))
    assert doubled.sharding.spec == P("x")
    assert capsys.readouterr().out.splitlines()[-1] == (
        "sum of the doubled real rows: 30.0"
    )


def test_a_spec_longer_than_the_array(mesh, line_mesh, capsys):
    vector = array_specs.too_long(mesh, line_mesh)
    np.testing.assert_array_equal(vector, np.arange(8.0))
    device_put_error, value_error = capsys.readouterr().out.split("\n\n", 1)
    assert device_put_error.startswith(
        "ValueError: Length of sharding.spec (2) must be equal to aval's ndim (1)."
    )
    assert value_error.startswith(
        "ValueError: shard_map applied to the function '<lambda>' was given an in_specs "
        "entry which is too long"
    )
    assert "in_specs is P('x', None) which has length 2" in value_error


def test_one_entry_per_dimension(mesh, capsys):
    split, grid = array_specs.too_long_fix(mesh, jnp.arange(8.0))
    np.testing.assert_array_equal(split, np.arange(8.0))
    np.testing.assert_array_equal(grid, np.arange(8.0).reshape(2, 4))
    assert {s.data.shape for s in split.addressable_shards} == {(1,)}
    assert {s.data.shape for s in grid.addressable_shards} == {(1, 1)}
    assert capsys.readouterr().out == "float32[8@(x,y)] float32[2@x,4@y]\n"


def test_a_bare_spec_without_a_mesh(line_mesh, capsys):
    array_specs.no_mesh(line_mesh, jnp.arange(8.0))
    assert capsys.readouterr().out.splitlines() == [
        "device_put: ValueError: Please set a mesh via `jax.set_mesh` if a "
        "PartitionSpec is passed to device_put",
        "reshard: ValueError: Using PartitionSpec when you are not under a mesh context "
        "is not allowed. Please pass a NamedSharding instance or enter into a mesh "
        "context via `jax.set_mesh`. Got P('x',)",
        "shard_map: ValueError: The context mesh cannot be empty. Use "
        "`jax.set_mesh(mesh)` to enter into a mesh context",
    ]


def test_set_mesh_or_a_named_sharding_fixes_it(line_mesh, capsys):
    placed, doubled = array_specs.no_mesh_fix(line_mesh, jnp.arange(8.0))
    np.testing.assert_array_equal(placed, np.arange(8.0))
    np.testing.assert_array_equal(doubled, 2 * np.arange(8.0))
    assert placed.sharding == NamedSharding(line_mesh, P("x"))
    assert capsys.readouterr().out == "float32[8@x] float32[8@x] float32[8@x]\n"
    assert jax.sharding.get_abstract_mesh().empty


def test_arrays_committed_to_different_devices(capsys):
    on_1, on_2 = array_specs.incompatible_devices()
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "committed: False True True"
    assert out[1] == "floating + on_1 runs on {CpuDevice(id=1)}"
    assert out[2].startswith(
        "ValueError: Received incompatible devices for jitted computation. Got argument "
    )
    assert "device ids [1]" in out[2] and "device ids [2]" in out[2]
    total = array_specs.incompatible_devices_fix(on_1, on_2)
    assert total.devices() == on_1.devices()
    np.testing.assert_array_equal(np.asarray(total), np.full(4, 2.0))
