import re

import numpy as np
import pytest
from jax import P
from jax.sharding import AxisType

from snippets.concepts.shard_map_vs_vmap import batching, sharding


@pytest.fixture(scope="module")
def batch():
    return batching.make_batch()


def test_rows_are_placed_two_per_device(batch, devices, capsys):
    x, _ = batch
    mesh, x_rows = sharding.place_rows(x)
    assert dict(mesh.shape) == {"rows": 8}
    assert mesh.axis_types == (AxisType.Explicit,)
    assert x_rows.sharding.spec == P("rows")
    assert {s.data.shape for s in x_rows.addressable_shards} == {(2, 3)}
    assert x_rows.devices() == set(devices)
    assert capsys.readouterr().out.splitlines() == [
        "float32[16@rows,3]",
        "each device holds (2, 3)",
    ]


def test_shard_map_matches_numpy_and_is_spread_over_the_mesh(batch, capsys):
    x, expected = batch
    mesh, x_rows = sharding.place_rows(x)
    capsys.readouterr()
    _, result = sharding.shard_rows(mesh, x_rows, expected)
    np.testing.assert_array_equal(result, expected)
    assert result.sharding.spec == P("rows")
    for shard in result.addressable_shards:
        i = shard.device.id
        np.testing.assert_array_equal(shard.data, expected[2 * i : 2 * i + 2])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "one device's block: float32[2,3]{V:rows}"
    assert lines[-2:] == ["matches NumPy: True", "type: float32[16@rows]"]


def test_the_drawing_has_one_cell_per_device(batch, capsys):
    x, expected = batch
    mesh, x_rows = sharding.place_rows(x)
    _, result = sharding.shard_rows(mesh, x_rows, expected)
    capsys.readouterr()
    sharding.draw(result)
    labels = re.findall(r"CPU \d+", capsys.readouterr().out)
    assert labels == [f"CPU {i}" for i in range(8)]


def test_an_unplaced_input_is_refused_on_an_explicit_mesh(batch, capsys):
    x, expected = batch
    mesh, x_rows = sharding.place_rows(x)
    sharded, _ = sharding.shard_rows(mesh, x_rows, expected)
    capsys.readouterr()
    sharding.unplaced_input(sharded, x)
    out = capsys.readouterr().out
    assert out.startswith(
        "ValueError: in_specs passed to shard_map: P('rows', None) does not match "
        "the specs of the input: P(None, None) for arg: float32[16,3]."
    )
    assert "you can use `jax.reshard` on the arguments" in out
