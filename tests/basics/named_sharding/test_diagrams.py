import re

import numpy as np
import pytest
from jax import P

from snippets.basics.named_sharding import diagrams, place_arrays


@pytest.fixture(scope="module")
def meshes():
    return place_arrays.build_meshes()


def blocks(array):
    """Each distinct block of the array -> the ids of the devices holding it."""
    held = {}
    for shard in array.addressable_shards:
        key = tuple((s.start, s.stop) for s in shard.index)
        held.setdefault(key, []).append(shard.device.id)
    return {key: sorted(ids) for key, ids in held.items()}


def labels(text):
    """The device labels of a drawn diagram, top to bottom and left to right."""
    return re.findall(r"CPU [\d,]+", text)


def test_show_sharding_prints_the_type_and_draws_the_blocks(meshes, capsys):
    mesh_8, _, _ = meshes
    vector = diagrams.one_dimensional(mesh_8)
    assert vector.shape == (8,) and vector.sharding.spec == P("x")
    np.testing.assert_array_equal(vector, np.zeros(8))
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "float32[8@x]"
    assert labels(out) == [f"CPU {i}" for i in range(8)]


def test_rows_over_a_line_one_band_per_device(meshes, capsys):
    rows = diagrams.rows_over_a_line(meshes[0])
    assert blocks(rows) == {((i, i + 1), (None, None)): [i] for i in range(8)}
    assert labels(capsys.readouterr().out) == [f"CPU {i}" for i in range(8)]


@pytest.mark.parametrize(
    ("step", "mesh_index", "grid", "per_block", "type_"),
    [
        (diagrams.blocks_2x4, 1, (2, 4), 1, "float32[8@x,4@y]"),
        (diagrams.blocks_4x2, 2, (4, 2), 1, "float32[8@x,4@y]"),
        (diagrams.swapped_axes, 1, (4, 2), 1, "float32[8@y,4@x]"),
        (diagrams.columns, 1, (1, 4), 2, "float32[8,4@y]"),
        (diagrams.halves, 1, (2, 1), 4, "float32[8@x,4]"),
        (diagrams.replicated, 1, (1, 1), 8, "float32[8,4]"),
    ],
)
def test_blocks_times_devices_per_block_is_eight(
    meshes, capsys, step, mesh_index, grid, per_block, type_
):
    array = step(meshes[mesh_index])
    held = blocks(array)
    row_blocks = {key[0] for key in held}
    col_blocks = {key[1] for key in held}
    assert (len(row_blocks), len(col_blocks)) == grid
    assert {len(ids) for ids in held.values()} == {per_block}
    out = capsys.readouterr().out
    assert out.splitlines()[0] == type_
    assert len(labels(out)) == grid[0] * grid[1]


def test_the_2x4_drawing_is_laid_out_like_the_mesh(meshes, capsys):
    mesh_2x4 = meshes[1]
    diagrams.blocks_2x4(mesh_2x4)
    drawn = [int(label.split()[1]) for label in labels(capsys.readouterr().out)]
    assert drawn == list(mesh_2x4.device_ids.ravel())


def test_swapped_axes_draw_the_mesh_transposed(meshes, capsys):
    mesh_2x4 = meshes[1]
    diagrams.swapped_axes(mesh_2x4)
    drawn = [int(label.split()[1]) for label in labels(capsys.readouterr().out)]
    assert drawn == list(mesh_2x4.device_ids.T.ravel())


def test_replicated_blocks_list_every_device_that_holds_them(meshes, capsys):
    mesh_2x4 = meshes[1]
    diagrams.columns(mesh_2x4)
    assert labels(capsys.readouterr().out) == [
        "CPU 0,4",
        "CPU 1,5",
        "CPU 2,6",
        "CPU 3,7",
    ]
    diagrams.halves(mesh_2x4)
    assert labels(capsys.readouterr().out) == ["CPU 0,1,2,3", "CPU 4,5,6,7"]
    diagrams.replicated(mesh_2x4)
    assert labels(capsys.readouterr().out) == ["CPU 0,1,2,3,4,5,6,7"]


def test_show_sharding_says_which_dimension_does_not_divide(line_mesh, mesh):
    with pytest.raises(
        ValueError,
        match=re.escape(
            "P('x',) splits dimension 0 of (6, 4) 8 ways, but 6 is not a "
            "multiple of 8: change the shape or spec."
        ),
    ):
        diagrams.show_sharding((6, 4), line_mesh, P("x"))
    with pytest.raises(ValueError, match=r"splits dimension 1 of \(8, 6\) 4 ways"):
        diagrams.show_sharding((8, 6), mesh, P("x", "y"))
    with pytest.raises(ValueError, match=r"splits dimension 0 of \(4,\) 8 ways"):
        diagrams.show_sharding((4,), mesh, P(("x", "y")))


def test_show_sharding_draws_only_1d_and_2d_arrays(mesh):
    with pytest.raises(
        ValueError, match=r"Only 1-D and 2-D arrays can be drawn, not \(2, 2, 2\)"
    ):
        diagrams.show_sharding((2, 2, 2), mesh, P("x"))


def test_show_sharding_names_a_mesh_axis_that_does_not_exist(mesh):
    with pytest.raises(
        ValueError, match=r"Resource axis: z of P\('z',\) is not found in mesh"
    ):
        diagrams.show_sharding((8, 4), mesh, P("z"))
