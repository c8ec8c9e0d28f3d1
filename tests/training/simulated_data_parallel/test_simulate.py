import numpy as np
import pytest
from flax import nnx

from snippets.training.simulated_data_parallel import simulate


@pytest.fixture(scope="module")
def run():
    x, model, expected = simulate.run_simulation()
    return x, model, expected


def test_the_simulation_equals_the_unsharded_layer(run):
    x, model, expected = run
    assert x.shape == (16, 4)
    linear = np.asarray(x) @ np.asarray(model.kernel[...]) + np.asarray(model.bias[...])
    np.testing.assert_allclose(expected, linear.reshape(-1), atol=1e-6)
    for num_shards in (1, 2, 4, 8, 16):
        out = simulate.shard_map_simulate(0, x, num_shards, 3)
        assert out.shape == (48,)
        np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)


def test_the_run_block_prints_shape_and_differences(capsys):
    simulate.run_simulation()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "simulated output: (48,)"
    assert [line.split(":")[0] for line in lines[1:]] == [
        " 1 shards of 16 rows",
        " 2 shards of  8 rows",
        " 4 shards of  4 rows",
        " 8 shards of  2 rows",
        "16 shards of  1 rows",
    ]
    # a bound the code checks: the differences themselves change from CPU to CPU
    assert all(line.endswith(": within 1e-06: True") for line in lines[1:])


def test_float_arguments_are_cast_to_int(run):
    x, _, expected = run
    out = simulate.shard_map_simulate(0.0, np.asarray(x), 8.0, 3.0)
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)


def test_the_seed_decides_the_layer(run):
    x, _, expected = run
    other = nnx.Linear(4, 3, rngs=nnx.Rngs(7))
    out = simulate.shard_map_simulate(7, x, 4, 3)
    assert not np.allclose(out, expected)
    np.testing.assert_allclose(out, other(x).reshape(-1), rtol=1e-6, atol=1e-6)


def test_each_bad_input_gets_a_message_that_says_what_to_change(run, capsys):
    x, _, _ = run
    simulate.bad_inputs(x)
    assert capsys.readouterr().out.splitlines() == [
        "ValueError: 16 rows do not split into 3 equal shards: make the number "
        "of rows of x a multiple of num_shards.",
        "ValueError: num_shards must be at least 1; got 0.",
        "ValueError: x must be 2-D (examples, features), not (4,).",
    ]


def test_negative_shard_counts_are_refused(run):
    x, _, _ = run
    with pytest.raises(ValueError, match="at least 1; got -2"):
        simulate.shard_map_simulate(0, x, -2, 3)
