import jax
import numpy as np
import pytest
from jax import P
from jax.sharding import AxisType, NamedSharding

from snippets.basics.partition_spec import spec_entries

SHAPE = (8, 16)


def placed_blocks(mesh, spec, shape=SHAPE):
    """Device id -> the block it really holds, after placing an array of `shape`."""
    values = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    placed = jax.device_put(values, NamedSharding(mesh, spec))
    return values, {s.device.id: np.asarray(s.data) for s in placed.addressable_shards}


def test_the_mesh_is_2_by_4_explicit(capsys):
    mesh = spec_entries.build_mesh()
    assert dict(mesh.shape) == {"x": 2, "y": 4}
    assert mesh.axis_types == (AxisType.Explicit, AxisType.Explicit)
    np.testing.assert_array_equal(mesh.device_ids, np.arange(8).reshape(2, 4))
    assert capsys.readouterr().out.startswith("{'x': 2, 'y': 4}\n")


def test_first_spec_cuts_rows_over_x_and_columns_over_y(mesh, capsys):
    sharding = spec_entries.first_spec(mesh)
    assert sharding.spec == P("x", "y")
    out = capsys.readouterr().out
    assert out.splitlines()[:4] == [
        "dimension 0: 2 pieces along mesh axis 'x'",
        "dimension 1: 4 pieces along mesh axis 'y'",
        "P is jax.sharding.PartitionSpec: True",
        "each device holds a block of shape (4, 4)",
    ]
    assert "CPU 7" in out  # the diagram was drawn
    values, blocks = placed_blocks(mesh, sharding.spec)
    for (i, j), device_id in np.ndenumerate(mesh.device_ids):
        np.testing.assert_array_equal(
            blocks[device_id], values[4 * i : 4 * i + 4, 4 * j : 4 * j + 4]
        )


def test_shard_shape_table_matches_the_blocks_devices_really_hold(mesh, capsys):
    shards = spec_entries.shard_shapes(mesh)
    assert shards == {
        P("x", "y"): (4, 4),
        P("y", "x"): (2, 8),
        P("x", None): (4, 16),
        P(None, "y"): (8, 4),
        P(("x", "y"), None): (1, 16),
        P(None, ("x", "y")): (8, 2),
        P("x"): (4, 16),
        P(): (8, 16),
    }
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["spec", "shard", "shape", "copies"]
    assert len({line.index("(") for line in lines[1:]}) == 1  # the column is aligned
    for spec, line in zip(shards, lines[1:], strict=True):
        assert line.startswith(str(spec))
        _, blocks = placed_blocks(mesh, spec)
        assert {b.shape for b in blocks.values()} == {shards[spec]}
        distinct = {b.tobytes() for b in blocks.values()}
        assert int(line.split()[-1]) == 8 // len(distinct)


@pytest.mark.parametrize(
    ("shape", "specs", "message"),
    [
        (
            (8,),
            [P("x", "y")],
            r"P\('x', 'y'\): more entries than \(8,\) has dimensions",
        ),
        ((8, 6), [P("x", "y")], r"does not fit \(8, 6\): .* partitioned 4 times"),
        ((8, 16), [P("z")], "does not fit .* not found in mesh"),
        ((8, 16), [P("x", "x")], "does not fit .* duplicate entries"),
        (
            (8, 16),
            [("x", "y")],
            r"specs must be one or more P\(...\), got \[\('x', 'y'\)\]",
        ),
        ((8, 16), [], r"specs must be one or more P\(...\), got \[\]"),
        ((8, 0), [P("x")], "positive whole numbers"),
        ((), [P()], "positive whole numbers"),
    ],
)
def test_shard_shape_table_says_what_to_change(mesh, shape, specs, message):
    with pytest.raises(ValueError, match=message):
        spec_entries.shard_shape_table(shape, mesh, specs)


def test_none_keeps_a_dimension_whole_and_shares_blocks(mesh, capsys):
    rows, columns = spec_entries.none_entries(mesh)
    out = capsys.readouterr().out
    assert "CPU 0,1,2,3" in out and "CPU 0,4" in out
    values, blocks = placed_blocks(mesh, rows.spec)
    np.testing.assert_array_equal(blocks[0], values[:4])  # whole rows
    np.testing.assert_array_equal(blocks[3], values[:4])  # same block along y
    values, blocks = placed_blocks(mesh, columns.spec)
    np.testing.assert_array_equal(blocks[1], values[:, 4:8])  # whole columns
    np.testing.assert_array_equal(blocks[5], values[:, 4:8])  # same block along x


def test_the_order_in_a_tuple_decides_which_device_gets_which_piece(mesh, capsys):
    orders = spec_entries.two_axes_on_one_dimension(mesh)
    out = capsys.readouterr().out
    assert "P(('x', 'y'),) -> each device holds (1,)" in out
    assert "P(('y', 'x'),) -> each device holds (1,)" in out
    for spec, piece in [
        (P(("x", "y")), lambda x, y: 4 * x + y),
        (P(("y", "x")), lambda x, y: 2 * y + x),
    ]:
        assert orders[spec].shard_shape((8,)) == (1,)
        values, blocks = placed_blocks(mesh, spec, (8,))
        for (x, y), device_id in np.ndenumerate(mesh.device_ids):
            assert blocks[device_id].tolist() == [values[piece(x, y)]]


def test_different_orders_do_not_mix_until_resharded(mesh, capsys):
    total = spec_entries.orders_do_not_mix(mesh)
    out = capsys.readouterr().out
    assert out.startswith(
        "ShardingTypeError: add got incompatible shardings for broadcasting: "
        "(('x', 'y'),), (('y', 'x'),)."
    )
    np.testing.assert_array_equal(total, 2 * np.arange(8.0))
    assert not hasattr(jax, "ShardingTypeError")  # hence the page catches Exception
    assert total.sharding.spec == P(("x", "y"))


def test_a_short_spec_leaves_trailing_dimensions_whole(mesh, capsys):
    short, spelled_out = spec_entries.short_specs(mesh)
    out = capsys.readouterr().out
    assert "same layout: True" in out and "equal specs: False" in out
    assert short.shard_shape((8, 16, 3)) == (4, 16, 3)
    _, short_blocks = placed_blocks(mesh, short.spec)
    _, spelled_blocks = placed_blocks(mesh, spelled_out.spec)
    for device_id, block in short_blocks.items():
        np.testing.assert_array_equal(block, spelled_blocks[device_id])


def test_an_empty_spec_puts_everything_everywhere(mesh, capsys):
    everywhere = spec_entries.replicated(mesh)
    assert everywhere.is_fully_replicated
    assert "CPU 0,1,2,3,4,5,6,7" in capsys.readouterr().out
    values, blocks = placed_blocks(mesh, everywhere.spec)
    for block in blocks.values():
        np.testing.assert_array_equal(block, values)


def test_an_axis_left_out_of_the_spec_copies_the_data_along_it(mesh, capsys):
    placed = spec_entries.unused_axis(mesh)
    expected = np.arange(32.0).reshape(8, 4)
    np.testing.assert_array_equal(placed, expected)
    assert placed.sharding.spec == P("x")
    assert str(jax.typeof(placed)) == "float32[8@x,4]"
    for shard in placed.addressable_shards:
        x = 0 if shard.device.id < 4 else 1
        np.testing.assert_array_equal(shard.data, expected[4 * x : 4 * x + 4])
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:] == [
        f"CPU {i} holds rows {0 if i < 4 else 4}-{3 if i < 4 else 7}" for i in range(8)
    ]
