import jax
import numpy as np
import pytest
from jax import P

from snippets.basics.named_sharding import ordinary_arrays, place_arrays


@pytest.fixture
def x():
    return place_arrays.unplaced_array()


def test_np_asarray_gathers_the_shards_into_one_numpy_array(x, mesh, capsys):
    x_grid, host = ordinary_arrays.gather_to_numpy(x, mesh)
    assert x_grid.sharding.spec == P("x", "y")
    assert {s.data.shape for s in x_grid.addressable_shards} == {(4, 1)}
    assert type(host) is np.ndarray and host.dtype == np.float32
    np.testing.assert_array_equal(host, np.arange(32.0).reshape(8, 4))
    assert capsys.readouterr().out.splitlines() == [
        "ndarray (8, 4) float32",
        "same values as x: True",
    ]


def test_arithmetic_matches_numpy_and_results_stay_sharded(x, mesh, capsys):
    x_grid, host = ordinary_arrays.gather_to_numpy(x, mesh)
    capsys.readouterr()
    results = ordinary_arrays.arithmetic(x_grid, host)
    assert {name: str(jax.typeof(r)) for name, r in results.items()} == {
        "x_grid * 2 + 1": "float32[8@x,4@y]",
        "jnp.exp(x_grid)": "float32[8@x,4@y]",
        "x_grid.T": "float32[4@y,8@x]",
        "x_grid.sum(axis=1)": "float32[8@x]",
    }
    np.testing.assert_array_equal(results["x_grid * 2 + 1"], host * 2 + 1)
    np.testing.assert_allclose(results["jnp.exp(x_grid)"], np.exp(host), rtol=1e-6)
    np.testing.assert_array_equal(results["x_grid.T"], host.T)
    np.testing.assert_array_equal(results["x_grid.sum(axis=1)"], host.sum(axis=1))
    # The sum over the y-split dimension leaves a vector split 2 ways, copied along y.
    assert {s.data.shape for s in results["x_grid.sum(axis=1)"].addressable_shards} == {
        (4,)
    }
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 4 and all(line.endswith("matches NumPy: True") for line in out)


def test_indexing_a_split_dimension_is_a_sharding_type_error(x, mesh, capsys):
    x_grid, _ = ordinary_arrays.gather_to_numpy(x, mesh)
    capsys.readouterr()
    row = ordinary_arrays.index_sharded_dimension(x_grid)
    lines = capsys.readouterr().out.splitlines()
    np.testing.assert_array_equal(row, np.asarray(x_grid)[0])
    assert row.sharding.spec == P("y")
    assert lines[2] == "float32[4@y] [0. 1. 2. 3.]"
    assert lines[0].startswith(
        "ShardingTypeError: Use `.at[...].get(out_sharding=)` to provide output "
        "PartitionSpec"
    )
    assert "float32[8@x,4@y]" in lines[0]
    assert lines[1] == "after gathering: [0. 1. 2. 3.]"
