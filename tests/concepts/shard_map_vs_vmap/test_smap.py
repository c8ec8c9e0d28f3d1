import numpy as np
import pytest
from jax import P

from snippets.concepts.shard_map_vs_vmap import batching, sharding, smap


@pytest.fixture(scope="module")
def placed():
    x, expected = batching.make_batch()
    mesh, x_rows = sharding.place_rows(x)
    _, shard_map_result = sharding.shard_rows(mesh, x_rows, expected)
    return mesh, x_rows, shard_map_result


def test_smap_exists_with_vmap_style_parameters(capsys):
    smap.smap_signature()
    assert capsys.readouterr().out.splitlines() == [
        "jax.smap exists: True",
        "parameters: ['f', 'in_axes', 'out_axes', 'axis_name']",
        "docstring: Single axis shard_map that maps a function `f` one axis at a time.",
    ]


def test_smap_without_a_context_mesh_is_refused(placed, capsys):
    _, x_rows, _ = placed
    capsys.readouterr()
    smap.no_mesh(x_rows)
    assert capsys.readouterr().out == (
        "ValueError: The context mesh cannot be empty. Use `jax.set_mesh(mesh)` to "
        "enter into a mesh context\n"
    )


def test_smap_under_set_mesh_is_shard_map_and_sees_blocks(placed, capsys):
    mesh, x_rows, shard_map_result = placed
    block_sums, per_block = smap.no_mesh(x_rows)
    capsys.readouterr()
    smap_result, inferred = smap.with_mesh(
        block_sums, per_block, mesh, x_rows, shard_map_result
    )
    np.testing.assert_array_equal(smap_result, shard_map_result)
    np.testing.assert_array_equal(inferred, shard_map_result)
    assert smap_result.sharding.spec == P("rows")
    assert inferred.sharding.spec == P("rows")
    lines = capsys.readouterr().out.splitlines()
    # The body is traced twice (given and inferred in_axes), each time with a block.
    assert lines[:2] == ["smap body sees: float32[2,3]{V:rows}"] * 2
    assert lines[-3:] == [
        "type: float32[16@rows]",
        "same as shard_map: True",
        "in_axes inferred:  True",
    ]


def test_smap_of_the_per_row_function_fails_like_shard_map(placed, capsys):
    mesh, x_rows, _ = placed
    capsys.readouterr()
    smap.not_vmap(mesh, x_rows)
    assert capsys.readouterr().out == (
        "ValueError: shard_map applied to the function 'sum_of_squares' was given an "
        "out_specs entry which is too long to be compatible with the corresponding "
        "output value from the function: ...\n"
    )


def test_nested_smaps_go_manual_one_axis_at_a_time(capsys):
    doubled = smap.one_axis_at_a_time()
    np.testing.assert_array_equal(doubled, 2 * np.arange(64.0).reshape(8, 8))
    assert doubled.sharding.spec == P("a", "b")
    assert {s.data.shape for s in doubled.addressable_shards} == {(4, 2)}
    assert capsys.readouterr().out.splitlines() == [
        "outer body: float32[4,8@b]{V:a}",
        "inner body: float32[4,2]{V:(a,b)}",
        "result: float32[8@a,8@b]",
        "equals 2 * y: True",
    ]
