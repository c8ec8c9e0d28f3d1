import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import P
from jax.sharding import NamedSharding

from snippets.guides.migration import placement

JIT_DEVICE_MESSAGE = "backend and device argument on jit is deprecated."


def removed_message(name):
    return (
        f"AttributeError: jax.{name} is deprecated; use jax.device_put instead. See "
        "https://docs.jax.dev/en/latest/migrate_pmap.html#drop-in-replacements for a "
        "drop-in replacement.\n"
    )


def test_device_put_replicated_is_gone(capsys):
    params = placement.old_replicated()
    np.testing.assert_array_equal(params, [1.0, 2.0, 3.0])
    assert capsys.readouterr().out == removed_message("device_put_replicated")
    with pytest.raises(AttributeError):
        jax.device_put_replicated  # noqa: B018


def test_device_put_with_an_empty_spec_replicates(line_mesh, capsys):
    params = jnp.array([1.0, 2.0, 3.0])
    replicated, stacked = placement.new_replicated(line_mesh, params)
    assert replicated.sharding.spec == P()
    for shard in replicated.addressable_shards:
        np.testing.assert_array_equal(shard.data, params)
    assert stacked.shape == (8, 3) and stacked.sharding.spec == P("x")
    for shard in stacked.addressable_shards:
        np.testing.assert_array_equal(shard.data, [params])
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == ["float32[3] True", "float32[8@x,3]"]


def test_device_put_sharded_is_gone(capsys):
    pieces = placement.old_sharded()
    assert len(pieces) == 8
    assert capsys.readouterr().out == removed_message("device_put_sharded")
    with pytest.raises(AttributeError):
        jax.device_put_sharded  # noqa: B018


def test_both_replacements_put_piece_i_on_device_i(line_mesh, capsys):
    pieces = placement.old_sharded()
    stacked, assembled = placement.new_sharded(line_mesh, pieces)
    expected = np.repeat(np.arange(8.0), 2).reshape(8, 2)
    for array in (stacked, assembled):
        np.testing.assert_array_equal(array, expected)
        assert array.sharding.spec == P("x")
        for shard in array.addressable_shards:
            np.testing.assert_array_equal(shard.data, [pieces[shard.device.id]])
    out = capsys.readouterr().out.splitlines()
    assert out[-3:] == [
        "float32[8@x,2] float32[8@x,2]",
        "same values: True",
        "cpu:3 [[3. 3.]]",
    ]


def test_make_array_from_single_device_arrays_does_not_copy(line_mesh):
    pieces = [
        jax.device_put(np.full((1, 2), i, np.float32), d)
        for i, d in enumerate(line_mesh.devices.flat)
    ]
    array = jax.make_array_from_single_device_arrays(
        (8, 2), NamedSharding(line_mesh, P("x")), pieces
    )
    for shard in array.addressable_shards:
        piece = pieces[shard.device.id]
        assert shard.data.unsafe_buffer_pointer() == piece.unsafe_buffer_pointer()


def test_positional_and_pmap_sharding_are_gone(capsys):
    placement.removed_sharding_classes()
    assert capsys.readouterr().out.splitlines() == [
        "AttributeError: module 'jax.sharding' has no attribute 'PositionalSharding'",
        "AttributeError: module 'jax.sharding' has no attribute 'PmapSharding'",
    ]
    for name in ("PositionalSharding", "PmapSharding"):
        with pytest.raises(AttributeError):
            getattr(jax.sharding, name)


def test_named_sharding_splits_rows_or_replicates(line_mesh, capsys):
    rows, everywhere = placement.named_sharding_instead(line_mesh)
    grid = np.arange(16.0).reshape(8, 2)
    np.testing.assert_array_equal(rows, grid)
    np.testing.assert_array_equal(everywhere, grid)
    for shard in rows.addressable_shards:
        np.testing.assert_array_equal(
            shard.data, grid[shard.device.id : shard.device.id + 1]
        )
    assert everywhere.sharding.is_fully_replicated
    assert capsys.readouterr().out.splitlines() == [
        "float32[8@x,2] (1, 2)",
        "float32[8,2] (8, 2)",
    ]


def test_a_spec_no_longer_equals_a_tuple(capsys):
    checks = placement.specs_and_tuples()
    assert list(checks.values()) == [False, True, True]
    assert capsys.readouterr().out.splitlines()[0].split()[-1] == "False"


def test_jit_device_warns_and_device_put_replaces_it(capsys):
    values = jnp.arange(8.0)
    on_one_old, caught = placement.old_jit_device(values)
    assert [w.category for w in caught] == [DeprecationWarning]
    assert str(caught[0].message).startswith(JIT_DEVICE_MESSAGE)
    on_one = placement.new_jit_device(values)
    for result in (on_one_old, on_one):
        np.testing.assert_array_equal(result, np.arange(8.0) + 1)
        assert result.devices() == {jax.devices()[1]}
    assert capsys.readouterr().out.startswith(
        f"DeprecationWarning: {JIT_DEVICE_MESSAGE}"
    )
    with pytest.warns(DeprecationWarning, match=JIT_DEVICE_MESSAGE):
        jax.jit(lambda v: v, device=jax.devices()[1])
