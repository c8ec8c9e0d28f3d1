import numpy as np
import pytest
from jax import P
from jax.sharding import AxisType

from snippets.models import batches
from snippets.training.two_d import placement


def test_four_shapes_of_the_same_eight_devices(meshes, capsys):
    assert {shape: dict(m.shape) for shape, m in meshes.items()} == {
        (8, 1): {"data": 8, "model": 1},
        (4, 2): {"data": 4, "model": 2},
        (2, 4): {"data": 2, "model": 4},
        (1, 8): {"data": 1, "model": 8},
    }
    for shape, mesh in meshes.items():
        assert mesh.axis_types == (AxisType.Auto, AxisType.Auto)
        np.testing.assert_array_equal(mesh.device_ids, np.arange(8).reshape(shape))
    placement.build_meshes()
    assert capsys.readouterr().out.splitlines() == [
        "(8, 1)  [[0], [1], [2], [3], [4], [5], [6], [7]]",
        "(4, 2)  [[0, 1], [2, 3], [4, 5], [6, 7]]",
        "(2, 4)  [[0, 1, 2, 3], [4, 5, 6, 7]]",
        "(1, 8)  [[0, 1, 2, 3, 4, 5, 6, 7]]",
    ]


@pytest.mark.parametrize("shape", [(3, 2), (4, 4), (8,), (2, 2, 2), (-1, -8)])
def test_a_mesh_that_does_not_hold_every_device_is_refused(shape):
    with pytest.raises(ValueError) as err:
        placement.two_d_mesh(shape)
    assert str(err.value) == (
        f"A mesh of shape {shape} does not hold the 8 devices: give two sizes whose "
        "product is 8, such as (2, 4)."
    )


def test_weights_split_over_model_and_the_batch_over_data(placed):
    (column_row, mesh, model, x, y), out = placed
    assert dict(mesh.shape) == {"data": 2, "model": 4}
    assert column_row["up.kernel"] == P(None, "model")
    assert {s.data.shape for s in model.up.kernel[...].addressable_shards} == {(32, 32)}
    assert {s.data.shape for s in model.down.kernel[...].addressable_shards} == {
        (32, 8)
    }
    assert x.sharding.spec == P("data") and y.sharding.spec == P("data")
    assert {s.data.shape for s in x.addressable_shards} == {(32, 32)}
    assert {s.data.shape for s in y.addressable_shards} == {(32, 8)}
    # A weight block is held by one device per data group, a batch half by a model group.
    holders = {}
    for s in model.down.kernel[...].addressable_shards:
        holders.setdefault(s.index[0].start, set()).add(s.device.id)
    assert holders == {0: {0, 4}, 32: {1, 5}, 64: {2, 6}, 96: {3, 7}}
    holders = {}
    for s in x.addressable_shards:
        holders.setdefault(s.index[0].start or 0, set()).add(s.device.id)
    assert holders == {0: {0, 1, 2, 3}, 32: {4, 5, 6, 7}}
    x0, y0 = batches(5, 64)[0]
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(y, y0)
    lines = out.splitlines()
    assert lines[-2:] == ["x: (64, 32) P('data',)", "per device: (32, 32)"]


def test_drawings_show_which_devices_share_a_block(placed, capsys):
    model, x = placed[0][2], placed[0][3]
    placement.draw_2x4(model, x)
    out = capsys.readouterr().out
    for label in ["CPU 0,4", "CPU 3,7", "CPU 0,1,2,3", "CPU 4,5,6,7"]:
        assert label in out


def test_shard_batch_refuses_uneven_or_mismatched_batches(meshes):
    x, y = batches(1, 60)[0]
    with pytest.raises(ValueError, match="A batch of 60 inputs and 60 targets"):
        placement.shard_batch(x, y, meshes[(8, 1)])
    with pytest.raises(ValueError, match="A batch of 60 inputs and 30 targets"):
        placement.shard_batch(x, y[:30], meshes[(2, 4)])
    # 60 = 4 x 15: fine on a data axis of 4.
    xs, _ = placement.shard_batch(x, y, meshes[(4, 2)])
    assert {s.data.shape for s in xs.addressable_shards} == {(15, 32)}


def test_the_figure_shows_each_block_on_the_devices_that_hold_it(placed):
    """The page's drawing of x and the kernels (docs_build.figures.blocks): each block's
    devices are those of its addressable_shards, and the text names the cutting axes."""
    from docs_build import figures

    (_, _, model, x, _), _ = placed
    up, down = model.up.kernel[...], model.down.kernel[...]
    figure = figures.blocks("t", ("x", x), ("up.kernel", up), ("down.kernel", down))
    for array in (x, up, down):
        held = {}
        for shard in array.addressable_shards:
            key = tuple(
                i.indices(n)[:2] for i, n in zip(shard.index, array.shape, strict=True)
            )
            held.setdefault(key, []).append(shard.device.id)
        assert figures.array_blocks(array) == sorted(
            (k, sorted(v)) for k, v in held.items()
        )
    # x: a model group (0-3) holds each half of the batch; a kernel's quarter is on one
    # device of each data group (0 and 4)
    assert "  block [0:32, 0:32]: devices 0-3" in figure.text
    assert "  block [0:32, 0:8]: devices 0, 4" in figure.text
    text = figure.text.split("up.kernel")
    assert (
        "split over data, 2 pieces" in text[0] and "copies along model (4)" in text[0]
    )
    assert (
        "split over model, 4 pieces" in text[1] and "copies along data (2)" in text[1]
    )
