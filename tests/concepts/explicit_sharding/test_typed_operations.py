import jax
import numpy as np
import pytest
from jax import P

from snippets.concepts.explicit_sharding import sharding_in_types, typed_operations


@pytest.fixture(scope="module")
def mesh():
    return sharding_in_types.build_mesh()


@pytest.fixture(scope="module")
def grid(mesh):
    return typed_operations.create(mesh)[0]


def test_arrays_are_created_split(mesh, capsys):
    grid, steps = typed_operations.create(mesh)
    assert grid.sharding.spec == P("x", "y") and steps.sharding.spec == P("y")
    assert {s.data.shape for s in grid.addressable_shards} == {(2, 2)}
    np.testing.assert_array_equal(np.asarray(steps), np.arange(8.0))
    assert capsys.readouterr().out.splitlines()[-2:] == [
        "grid:  float32[4@x,8@y]",
        "steps: float32[8@y]",
    ]


def test_a_reshape_keeps_whole_blocks_and_refuses_the_rest(mesh, grid):
    shapes = typed_operations.reshape(mesh, grid)
    assert shapes == {
        (32,): "float32[32@(x,y)]",
        (2, 2, 8): "float32[2@x,2,8@y]",
        (8, 4): "ShardingTypeError: This reshape is not supported",
    }


def test_the_merge_moves_data_and_the_split_does_not(mesh, grid):
    """The page: compiled for this CPU, the merge to (32,) has an all-to-all and a
    collective-permute, the split to (2, 2, 8) no collective; both give NumPy's values."""
    from snippets.hlo import count_collectives

    values = jax.device_put(np.arange(32.0).reshape(4, 8), grid.sharding)
    found = {}
    with jax.set_mesh(mesh):
        for shape in [(32,), (2, 2, 8)]:
            reshape = jax.jit(lambda a, shape=shape: a.reshape(shape))
            np.testing.assert_array_equal(
                np.asarray(reshape(values)), np.arange(32.0).reshape(shape)
            )
            found[shape] = count_collectives(reshape.lower(values).compile())
    assert set(found[(32,)]) == {"all-to-all", "collective-permute"}
    assert found[(2, 2, 8)] == {}


def test_with_sharding_constraint_only_checks_on_explicit_axes(mesh, grid):
    said = typed_operations.constraint_checks(mesh, grid)
    assert said[0] == "P('x', 'y'): float32[4@x,8@y]"
    assert said[1] == (
        "P('x', None): AssertionError: `with_sharding_constraint` acts as an assert when "
        "all axes of mesh are of type `Explicit`"
    )
