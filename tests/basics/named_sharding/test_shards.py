import re

import numpy as np
import pytest
from jax import P

from snippets.basics.named_sharding import place_arrays, shards


@pytest.fixture
def x():
    return place_arrays.unplaced_array()


@pytest.fixture
def x_rows(x, line_mesh):
    return place_arrays.put_on_mesh(x, line_mesh)[1]


def shard_layout(array):
    """(device id, index, shape, replica_id) per shard, in device order."""
    return [
        (s.device.id, s.index, s.data.shape, s.replica_id)
        for s in sorted(array.addressable_shards, key=lambda s: s.device.id)
    ]


def test_each_shard_is_the_slice_its_index_names(x, x_rows, mesh):
    x_halves = shards.partly_replicated(x, mesh)
    for array in (x_rows, x_halves):
        for shard in array.addressable_shards:
            np.testing.assert_array_equal(shard.data, np.asarray(x)[shard.index])


def test_split_over_eight_devices_one_row_each(x_rows, capsys):
    capsys.readouterr()
    shards.split_shards(x_rows)
    assert shard_layout(x_rows) == [
        (i, (slice(i, i + 1), slice(None)), (1, 4), 0) for i in range(8)
    ]
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "device  index     shape   replica_id"
    assert lines[1] == "cpu:0   [0:1, :]  (1, 4)  0"
    assert lines[8] == "cpu:7   [7:8, :]  (1, 4)  0"
    assert len(lines) == 9


def test_p_x_on_a_2x4_mesh_gives_each_half_to_four_devices(x, mesh, capsys):
    x_halves = shards.partly_replicated(x, mesh)
    assert x_halves.sharding.spec == P("x")
    top, bottom = (slice(0, 4), slice(None)), (slice(4, 8), slice(None))
    assert shard_layout(x_halves) == [
        (i, top if i < 4 else bottom, (4, 4), i % 4) for i in range(8)
    ]
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == "cpu:0   [0:4, :]  (4, 4)  0"
    assert lines[4] == "cpu:3   [0:4, :]  (4, 4)  3"
    assert lines[5] == "cpu:4   [4:8, :]  (4, 4)  0"


def test_p_empty_puts_the_whole_array_on_every_device(x, mesh, capsys):
    x_full = shards.replicated(x, mesh)
    assert x_full.sharding.spec == P()
    assert x_full.is_fully_replicated
    assert shard_layout(x_full) == [
        (i, (slice(None), slice(None)), (8, 4), i) for i in range(8)
    ]
    assert capsys.readouterr().out.splitlines()[-1] == "cpu:7   [:, :]  (8, 4)  7"


def test_bytes_per_device_shrink_with_the_split(x, x_rows, mesh, capsys):
    x_halves = shards.partly_replicated(x, mesh)
    x_full = shards.replicated(x, mesh)
    for array, per_device in [(x_rows, 16), (x_halves, 64), (x_full, 128)]:
        assert {s.data.nbytes for s in array.addressable_shards} == {per_device}
    capsys.readouterr()
    shards.bytes_per_device(x, x_rows, x_halves, x_full)
    table = [re.split(r"\s{2,}", line) for line in capsys.readouterr().out.splitlines()]
    assert table == [
        ["the whole array: 128 bytes"],
        [""],
        ["placement", "per device", "all devices"],
        ["P('x') on the (8,) mesh", "16", "128"],
        ["P('x') on the (2, 4) mesh", "64", "512"],
        ["P() on the (2, 4) mesh", "128", "1024"],
    ]


def test_print_shards_of_an_unplaced_array_shows_one_device(x, capsys):
    shards.print_shards(x)
    assert capsys.readouterr().out.splitlines() == [
        "device  index   shape   replica_id",
        "cpu:0   [:, :]  (8, 4)  0",
    ]


def test_print_shards_refuses_a_numpy_array_and_says_what_to_do():
    with pytest.raises(TypeError, match=r"got ndarray: place it with jax\.device_put"):
        shards.print_shards(np.zeros((8, 4)))


def test_the_bytes_are_the_elements_and_a_tpu_pads_small_blocks(x, x_rows, mesh):
    """The page's TPU figures: the blocks (1, 4), (4, 4) and (8, 4) take 512, 2,048 and
    2,048 bytes per chip compiled for v5e:2x4 and v5p:2x2x2 (argument_size_in_bytes, libtpu
    0.0.50.1), which is the planner's tile model, itself held to compiled TPU programs."""
    from docs_build.planner import tiled

    x_halves = shards.partly_replicated(x, mesh)
    x_full = shards.replicated(x, mesh)
    blocks = [a.addressable_shards[0].data for a in (x_rows, x_halves, x_full)]
    assert [b.shape for b in blocks] == [(1, 4), (4, 4), (8, 4)]
    assert [b.nbytes for b in blocks] == [16, 64, 128]  # what the CPU devices hold
    assert [tiled(b.shape) * b.itemsize for b in blocks] == [512, 2048, 2048]
    assert tiled((1024, 1024)) == 1024 * 1024  # no padding for a large tiled array
