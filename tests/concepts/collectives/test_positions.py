import numpy as np

from snippets.concepts.collectives import diagram, positions
from tests.concepts.collectives.cells import cells


def test_axis_index_gives_each_device_its_grid_position(line_mesh, mesh, capsys):
    x, _ = diagram.build_data(line_mesh)
    _, before, after = positions.axis_index(mesh, x)
    assert after.dtype == np.int32
    for shard in after.addressable_shards:
        (where,) = np.argwhere(mesh.device_ids == shard.device.id)
        np.testing.assert_array_equal(shard.data[0], where)
    shards = sorted(after.addressable_shards, key=lambda s: s.device.id)
    assert shards[5].data[0].tolist() == [1, 1]
    for _, _, got in cells(before, after):
        assert {colour for _, colour in got} == {None}  # positions, not moved data
