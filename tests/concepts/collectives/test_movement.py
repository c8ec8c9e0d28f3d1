import jax
import numpy as np
import pytest

from docs_build.render import DEVICE_COLOURS
from snippets.concepts.collectives import diagram, movement
from tests.concepts.collectives.cells import BLOCKS, BLOCKS8, cells, rows


def test_a_ring_shift_sends_each_block_to_the_next_device(line_mesh, data):
    _, before, after = movement.ring_shift(line_mesh, data[0])
    np.testing.assert_array_equal(rows(before), BLOCKS)
    np.testing.assert_array_equal(rows(after), np.roll(BLOCKS, 1, axis=0))
    # Each block keeps its sender's colour.
    for d, (_, _, got) in enumerate(cells(before, after)):
        assert {colour for _, colour in got} == {DEVICE_COLOURS[(d - 1) % 8]}


def test_a_device_nobody_sends_to_gets_zeros(line_mesh, data, capsys):
    after = movement.open_shift(line_mesh, data[0])
    expected = np.roll(BLOCKS, 1, axis=0)
    expected[0] = 0.0
    np.testing.assert_array_equal(rows(after), expected)
    assert capsys.readouterr().out == "device 0 receives nothing and holds [0. 0.]\n"


def test_ppermute_refuses_a_device_twice_as_source_or_destination(line_mesh, data):
    for perm in ([(0, 1), (1, 1)], [(0, 1), (0, 2)]):
        with pytest.raises(ValueError, match="sources and destinations must be unique"):
            diagram.per_device(
                lambda b, p=perm: jax.lax.ppermute(b, "x", p), data[0], line_mesh
            )


def test_all_to_all_transposes_the_pieces(line_mesh, data):
    _, before, after = movement.all_to_all(line_mesh, data[1])
    np.testing.assert_array_equal(rows(before), BLOCKS8)
    np.testing.assert_array_equal(rows(after), BLOCKS8.T)
    # Device d's j-th number came from device j.
    for _, _, got in cells(before, after):
        assert [colour for _, colour in got] == DEVICE_COLOURS


def test_all_to_all_untiled_gives_the_same_here_and_needs_exactly_8(line_mesh, data):
    untiled = lambda b: jax.lax.all_to_all(b, "x", 0, 0)  # noqa: E731
    _, after = diagram.per_device(untiled, data[1], line_mesh)
    np.testing.assert_array_equal(rows(after), BLOCKS8.T)
    with pytest.raises(ValueError, match=r"to equal x\.shape\[split_axis\]"):
        diagram.per_device(untiled, np.arange(128.0), line_mesh)
