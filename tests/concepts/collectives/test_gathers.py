import jax
import numpy as np
import pytest

from docs_build.render import DEVICE_COLOURS, per_device_table
from snippets.concepts.collectives import diagram, gathers
from tests.concepts.collectives.cells import BLOCKS, BLOCKS8, cells, rows


def test_all_gather_stacks_every_block_on_every_device(line_mesh, data):
    _, before, after = gathers.all_gather(line_mesh, data[0])
    np.testing.assert_array_equal(rows(before), BLOCKS)
    assert after.shape == (8, 8, 2)
    for held in rows(after):
        np.testing.assert_array_equal(held, BLOCKS)
    assert "per device: (2,) -> (8, 2)" in per_device_table(before, after, "t").text


def test_tiled_all_gather_rebuilds_the_whole_vector_in_senders_colours(line_mesh, data):
    _, before, after = gathers.all_gather_tiled(line_mesh, data[0])
    for held in rows(after):
        np.testing.assert_array_equal(held, BLOCKS.ravel())
    assert "per device: (2,) -> (16,)" in per_device_table(before, after, "t").text
    for _, _, got in cells(before, after):
        assert [colour for _, colour in got] == [
            DEVICE_COLOURS[i // 2] for i in range(16)
        ]


def test_psum_scatter_gives_device_i_piece_i_of_the_sum(line_mesh, data):
    _, before, after = gathers.psum_scatter(line_mesh, data[1])
    np.testing.assert_array_equal(rows(before), BLOCKS8)
    np.testing.assert_array_equal(rows(after), BLOCKS8.sum(axis=0))
    assert rows(after).tolist() == [280.0 + 8 * i for i in range(8)]
    assert "per device: (8,) -> ()" in per_device_table(before, after, "t").text


def test_psum_scatter_then_tiled_all_gather_is_a_psum(line_mesh, data):
    def halves(block):
        piece = jax.lax.psum_scatter(block, "x", tiled=True)
        return jax.lax.all_gather(piece, "x", tiled=True)

    _, after = diagram.per_device(halves, data[1], line_mesh)
    np.testing.assert_array_equal(rows(after), np.tile(BLOCKS8.sum(axis=0), (8, 1)))


def test_tiled_and_scatter_dimension_decide_the_result_shape(line_mesh, data, capsys):
    shapes = gathers.psum_scatter_shapes(line_mesh, data[1])
    assert shapes == {
        "(defaults)": ((8,), ()),
        "tiled=True": ((8,), (1,)),
        "scatter_dimension=1": ((2, 8), (2,)),
        "scatter_dimension=1, tiled=True": ((2, 8), (2, 1)),
    }
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["(defaults)", "(8,)", "->", "()"]
    assert lines[3].endswith("(2, 8) -> (2, 1)")


def test_untiled_psum_scatter_needs_exactly_one_entry_per_device(line_mesh):
    with pytest.raises(ValueError, match="scatter dimension size 16 must match shard"):
        diagram.per_device(
            lambda b: jax.lax.psum_scatter(b, "x"), np.arange(128.0), line_mesh
        )
