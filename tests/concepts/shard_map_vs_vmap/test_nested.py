import numpy as np
import pytest
from jax import P

from snippets.concepts.shard_map_vs_vmap import batching, nested, sharding


@pytest.fixture(scope="module")
def placed():
    x, expected = batching.make_batch()
    mesh, x_rows = sharding.place_rows(x)
    _, shard_map_result = sharding.shard_rows(mesh, x_rows, expected)
    return expected, mesh, x_rows, shard_map_result


def test_vmap_inside_the_body_gives_the_same_numbers(placed, capsys):
    expected, mesh, x_rows, shard_map_result = placed
    _, result = nested.vmap_inside(mesh, x_rows, shard_map_result)
    np.testing.assert_array_equal(result, expected)
    assert result.sharding.spec == P("rows")
    assert {s.data.shape for s in result.addressable_shards} == {(2,)}
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:] == ["same as before: True", "type: float32[16@rows]"]


def test_the_per_device_program_is_vmaps_on_a_block_of_two_rows(placed, capsys):
    _, mesh, x_rows, shard_map_result = placed
    rows_per_device, _ = nested.vmap_inside(mesh, x_rows, shard_map_result)
    capsys.readouterr()
    nested.nested_jaxpr(rows_per_device, x_rows)
    jaxpr = capsys.readouterr().out
    assert "a:f32[16@rows,3]" in jaxpr
    assert "c:f32[2,3]{V:rows}" in jaxpr
    assert "e:f32[2]{V:rows} = reduce_sum[axes=(np.int64(1),)" in jaxpr
    assert "out_specs=(P('rows',),)" in jaxpr


def test_forgetting_the_vmap_gives_a_scalar_per_device(placed, capsys):
    _, mesh, x_rows, _ = placed
    capsys.readouterr()
    nested.forgot_vmap(mesh, x_rows)
    out = capsys.readouterr().out
    assert out.startswith(
        "ValueError: shard_map applied to the function 'sum_of_squares' was given "
        "an out_specs entry which is too long"
    )
    assert (
        "out_specs is P('rows',) which has length 1, but sum_of_squares(*args) has "
        "shape float32[], which has rank 0 (and 0 < 1)"
    ) in out
