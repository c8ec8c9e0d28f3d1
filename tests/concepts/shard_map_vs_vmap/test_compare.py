import os
import re
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import P
from jax.sharding import NamedSharding

from snippets.concepts.shard_map_vs_vmap import batching, compare
from snippets.concepts.shard_map_vs_vmap.compare import shard_map_vs_vmap

ROOT = Path(__file__).resolve().parents[3]


def sums_of_squares(x):
    return (np.asarray(x, dtype=np.float64) ** 2).sum(axis=1)


@pytest.fixture(scope="module")
def batch():
    return batching.make_batch()


def test_both_rows_are_the_per_row_sum_of_squares(devices):
    x = np.arange(48.0, dtype=np.float32).reshape(16, 3) / 7
    both = shard_map_vs_vmap(x)
    assert both.shape == (2, 16)
    np.testing.assert_allclose(both[0], sums_of_squares(x), rtol=1e-6)
    np.testing.assert_allclose(both[1], sums_of_squares(x), rtol=1e-6)
    assert both.sharding.spec == P(None, "rows")
    assert both.devices() == set(devices)
    assert {s.data.shape for s in both.addressable_shards} == {(2, 2)}


def test_the_exercise_example():
    both = shard_map_vs_vmap(jnp.array([[1.0, 0.0], [0.0, 1.0]]), jax.devices()[:2])
    np.testing.assert_array_equal(both, [[1.0, 1.0], [1.0, 1.0]])


def test_the_seed_example_works_with_no_devices_given():
    both = shard_map_vs_vmap(jnp.array([[1.0, 0.0], [0.0, 1.0]]))
    np.testing.assert_array_equal(both, [[1.0, 1.0], [1.0, 1.0]])
    assert len(both.devices()) == 2


@pytest.mark.parametrize(("rows", "used"), [(1, 1), (2, 2), (3, 3), (8, 8), (17, 1)])
def test_any_batch_size_splits_over_the_most_devices_that_divide_it(rows, used):
    x = np.arange(rows * 3, dtype=np.float32).reshape(rows, 3)
    both = shard_map_vs_vmap(x)
    np.testing.assert_allclose(both, np.stack([sums_of_squares(x)] * 2), rtol=1e-6)
    assert len(both.devices()) == used
    assert both.sharding.spec == P(None, "rows")
    assert {s.data.shape for s in both.addressable_shards} == {(2, rows // used)}


def test_an_input_already_on_another_mesh_is_accepted(mesh):
    x = np.arange(64.0, dtype=np.float32).reshape(16, 4)
    on_2x4 = jax.device_put(x, NamedSharding(mesh, P("x", "y")))
    both = shard_map_vs_vmap(on_2x4)
    np.testing.assert_allclose(both, np.stack([sums_of_squares(x)] * 2), rtol=1e-6)


def test_the_page_example(batch, capsys):
    x, expected = batch
    capsys.readouterr()
    both = compare.compare(x, expected)
    np.testing.assert_array_equal(both, np.stack([expected, expected]))
    lines = capsys.readouterr().out.splitlines()
    assert lines[2:] == [
        "type: float32[2,16@rows]",
        "rows equal: True",
        "match NumPy: True",
        "each device: (2, 2)",
    ]


def test_twelve_rows_on_eight_devices_says_what_to_change(batch, capsys):
    x, expected = batch
    capsys.readouterr()
    on_six = compare.indivisible(x)
    assert len(on_six.devices()) == 6
    np.testing.assert_array_equal(on_six, np.stack([expected[:12]] * 2))
    assert capsys.readouterr().out.splitlines() == [
        "ValueError: x has 12 rows, which do not split evenly over 8 devices: pad x "
        "to 16 rows, or pass devices=jax.devices()[:6].",
        "float32[2,12@rows] on 6 devices",
        "each device: (2, 2)",
    ]


@pytest.mark.parametrize(
    ("rows", "n", "message"),
    [
        (
            7,
            8,
            "x has 7 rows, which do not split evenly over 8 devices: pad x to 8 "
            "rows, or pass devices=jax.devices()[:7].",
        ),
        (
            9,
            4,
            "x has 9 rows, which do not split evenly over 4 devices: pad x to 12 "
            "rows, or pass devices=jax.devices()[:3].",
        ),
        (
            5,
            2,
            "x has 5 rows, which do not split evenly over 2 devices: pad x to 6 "
            "rows, or pass devices=jax.devices()[:1].",
        ),
    ],
)
def test_indivisible_batches_are_refused(rows, n, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        shard_map_vs_vmap(np.ones((rows, 3)), jax.devices()[:n])


def test_shapes_and_devices_are_checked():
    with pytest.raises(
        ValueError, match=r"x must be 2-D, \(B, D\), but has shape \(8,\)"
    ):
        shard_map_vs_vmap(np.ones(8))
    with pytest.raises(ValueError, match="devices is empty"):
        shard_map_vs_vmap(np.ones((8, 2)), devices=[])


def test_one_device_takes_every_row(batch, devices, capsys):
    x, expected = batch
    both = shard_map_vs_vmap(x)
    capsys.readouterr()
    on_one = compare.one_device(x, both)
    assert on_one.devices() == {devices[0]}
    np.testing.assert_array_equal(on_one, np.stack([expected, expected]))
    assert capsys.readouterr().out.splitlines() == [
        "float32[2,16@rows] on {CpuDevice(id=0)}",
        "each device: (2, 16)",
        "same numbers as on 8: True",
    ]


@pytest.mark.slow
def test_on_a_one_device_machine_the_default_mesh_has_one_device():
    code = (
        "import numpy as np, jax\n"
        "from snippets.concepts.shard_map_vs_vmap.compare import shard_map_vs_vmap\n"
        "x = np.arange(21.0).reshape(7, 3)\n"  # 7 rows: only one device divides it
        "both = shard_map_vs_vmap(x)\n"
        "print(jax.device_count(), both.shape, both.sharding.mesh.shape['rows'])\n"
        "print(np.allclose(both, (x**2).sum(axis=1)))\n"
    )
    env = {
        **os.environ,
        "JAX_PLATFORMS": "cpu",
        "JAX_NUM_CPU_DEVICES": "1",
        "PYTHONPATH": str(ROOT),
    }
    env.pop("XLA_FLAGS", None)
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["1 (2, 7) 1", "True"]
