import numpy as np
import pytest

from docs_build.render import DEVICE_COLOURS
from snippets.concepts.collectives import diagram, reductions
from tests.concepts.collectives.cells import BLOCKS, cells, rows

DEVICE_7 = DEVICE_COLOURS[7]


@pytest.fixture
def x(line_mesh):
    return diagram.build_data(line_mesh)[0]


@pytest.mark.parametrize(
    ("step", "reference", "shown"),
    [
        # New numbers have no device's colour; pmax's are device 7's own.
        (reductions.psum, BLOCKS.sum(axis=0), [("280", None), ("288", None)]),
        (reductions.pmean, BLOCKS.mean(axis=0), [("35", None), ("36", None)]),
        (reductions.pmax, BLOCKS.max(axis=0), [("70", DEVICE_7), ("71", DEVICE_7)]),
    ],
)
def test_every_device_gets_the_reduction_of_all_blocks(
    line_mesh, x, step, reference, shown
):
    f, before, after = step(line_mesh, x)
    np.testing.assert_array_equal(rows(before), BLOCKS)
    np.testing.assert_allclose(rows(after), np.tile(reference, (8, 1)))
    assert f.__name__ in {"total", "mean", "largest"}
    table = cells(before, after)
    assert len(table) == 8
    for d, (device, _, got) in enumerate(table):
        assert device == [(f"cpu:{d}", DEVICE_COLOURS[d])]
        assert got == shown


def test_psum_over_y_adds_within_each_row_of_the_grid(mesh, x, capsys):
    _, before, after = reductions.psum_one_axis(mesh, x)
    np.testing.assert_array_equal(rows(before), BLOCKS)
    grid_rows = BLOCKS.reshape(2, 4, 2).sum(axis=1)  # one sum per row of the mesh
    np.testing.assert_array_equal(rows(after), np.repeat(grid_rows, 4, axis=0))
    assert grid_rows.tolist() == [[60.0, 64.0], [220.0, 224.0]]
    # Device 5 sits at x=1, y=1, as the page says of the grid.
    assert [int(i) for i in np.argwhere(mesh.device_ids == 5)[0]] == [1, 1]
