"""The real thing: two processes of four CPU devices each, trained together."""

import numpy as np
import pytest

from snippets.training.multi_host import launch

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def results():
    return launch.launch(num_processes=2, steps=5, batch=64, timeout=120)


def test_each_process_drove_four_of_eight_devices(results):
    lines = [
        next(line for line in r["log"].splitlines() if line.startswith("process"))
        for r in results
    ]
    assert lines[0].startswith(
        "process 0 of 2: devices [0, 1, 2, 3] of 8, rows 0:32 of 64, "
        "loaded (5, 32, 32), losses"
    )
    assert lines[1].startswith(
        "process 1 of 2: devices [2048, 2049, 2050, 2051] of 8, rows 32:64 of 64, "
        "loaded (5, 32, 32), losses"
    )


def test_each_process_loaded_only_its_own_rows(results):
    """No process holds the whole batch: each loaded 32 of the 64 rows of every batch."""
    for result in results:
        assert result["loaded"].tolist() == [5, 32, 32]


def test_both_processes_hold_the_same_result(results):
    first, second = results
    np.testing.assert_array_equal(first["losses"], second["losses"])
    for name in ("up.kernel", "up.bias", "down.kernel", "down.bias"):
        np.testing.assert_array_equal(first[name], second[name])


def test_two_processes_train_like_one_process_and_one_device(results, single_run):
    (losses, weights, ref_losses, ref_model), _ = single_run
    ref_weights = {
        "up.kernel": ref_model.up.kernel[...],
        "up.bias": ref_model.up.bias[...],
        "down.kernel": ref_model.down.kernel[...],
        "down.bias": ref_model.down.bias[...],
    }
    for result in results:
        np.testing.assert_allclose(result["losses"], losses, rtol=0, atol=1e-5)
        np.testing.assert_allclose(result["losses"], ref_losses, rtol=0, atol=1e-5)
        for name, value in weights.items():
            np.testing.assert_allclose(result[name], value, rtol=0, atol=1e-5)
            np.testing.assert_allclose(
                result[name], ref_weights[name], rtol=0, atol=1e-5
            )
