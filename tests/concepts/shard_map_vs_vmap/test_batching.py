import jax
import numpy as np
from jax.sharding import SingleDeviceSharding

from snippets.concepts.shard_map_vs_vmap import batching


def test_the_batch_is_16_rows_of_3_and_expected_is_numpy(capsys):
    x, expected = batching.make_batch()
    assert x.shape == (16, 3) and x.dtype == np.float32
    assert np.all(np.asarray(x) == np.round(np.asarray(x)))  # whole numbers
    np.testing.assert_array_equal(expected, (np.asarray(x) ** 2).sum(axis=1))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "x: float32[16,3]"
    assert lines[1].startswith("expected: [ 5. 14. 22.")


def test_sum_of_squares_is_per_row():
    np.testing.assert_allclose(
        batching.sum_of_squares(np.array([1.0, -2.0, 3.0])), 14.0
    )


def test_vmap_matches_numpy_and_stays_on_device_0(devices, capsys):
    x, expected = batching.make_batch()
    capsys.readouterr()
    batched, vmap_result = batching.vmap_rows(x, expected)
    np.testing.assert_array_equal(vmap_result, expected)
    np.testing.assert_array_equal(batched(x), expected)
    assert isinstance(vmap_result.sharding, SingleDeviceSharding)
    assert vmap_result.devices() == {devices[0]}
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:] == [
        "matches NumPy: True",
        "type: float32[16]",
        "lives on: SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)",
    ]


def test_the_vmap_jaxpr_is_whole_array_ops_with_no_loop(capsys):
    x, expected = batching.make_batch()
    batched, _ = batching.vmap_rows(x, expected)
    capsys.readouterr()
    batching.vmap_jaxpr(batched, x)
    jaxpr = capsys.readouterr().out
    assert "a:f32[16,3]" in jaxpr
    assert "integer_pow[y=2] a" in jaxpr
    assert "c:f32[16] = reduce_sum[axes=(np.int64(1),)" in jaxpr
    for absent in ("while", "scan", "shard_map", "mesh"):
        assert absent not in jaxpr
    assert str(jax.make_jaxpr(batched)(x)).count("\n") == 3
