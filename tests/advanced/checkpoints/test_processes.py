"""Which blocks each process writes: the page's table, and the real two-process save."""

import re
from pathlib import Path

import jax
import numpy as np
import pytest
import tensorstore as ts
from jax import P
from jax.sharding import AxisType, NamedSharding
from orbax.checkpoint import v1 as ocp

from snippets.advanced.checkpoints import processes, state
from tests.advanced.checkpoints.conftest import quietly


def test_block_text_writes_an_index_as_numpy_does():
    assert processes.block_text((slice(None), slice(0, 64))) == "[:, 0:64]"
    assert processes.block_text((slice(4, 8),)) == "[4:8]"
    assert processes.block_text((slice(None), slice(None))) == "whole"
    assert processes.block_text(()) == "whole"


def test_the_table_splits_every_array_between_the_two_halves(saved):
    (_, _, saved_state), _ = saved
    first, second = quietly(processes.by_process_here, saved_state)[0]
    assert first["model.up.kernel"] == "[:, 0:64]"
    assert second["model.up.kernel"] == "[:, 64:128]"
    assert first["optimizer.opt_state.0.nu.down.kernel"] == "[0:64, :]"
    assert second["model.down.bias"] == "[4:8]"
    # The step counts are on every device: one copy is written, from device 0.
    for name in ("optimizer.opt_state.0.count", "optimizer.step"):
        assert (first[name], second[name]) == ("whole", "nothing")
    assert len(first) == len(second) == 14


def test_a_divisible_copied_array_is_written_a_slice_from_each_copy(tmp_path, devices):
    """The page's note: with copies to share the work, Orbax writes it in slices."""
    four = jax.make_mesh(
        (4,), ("model",), axis_types=(AxisType.Auto,), devices=devices[:4]
    )
    copied = jax.device_put(np.arange(8.0, dtype=np.float32), NamedSharding(four, P()))
    ocp.save(tmp_path / "copied", {"x": copied})
    stored = ocp.metadata(tmp_path / "copied").metadata["x"]
    assert stored.storage_metadata.chunk_shape == (2,)  # 8 values, a slice per copy
    assert {k for k in chunk_keys(tmp_path / "copied" / "state") if "/c" in k} == {
        f"x/c/{i}" for i in range(4)
    }


def test_the_launcher_refuses_a_count_of_processes_the_state_cannot_split_over():
    with pytest.raises(ValueError, match=r"num_processes=3: use 1 or 2"):
        processes.launch_save(Path("unused"), num_processes=3)


def test_the_worker_refuses_a_process_id_out_of_range(capsys):
    with pytest.raises(SystemExit):
        processes.main(
            ["--process-id", "2", "--port", "1", "--path", "p", "--out", "o"]
        )
    assert "--process-id must be in 0..1" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------
# The real thing: two processes of four CPU devices each save one checkpoint.


@pytest.fixture(scope="module")
def two_processes(tmp_path_factory):
    path = tmp_path_factory.mktemp("two") / "two-processes"
    return path, processes.launch_save(path, num_processes=2, timeout=180)


def chunk_keys(store) -> set[str]:
    kvstore = ts.KvStore.open({"driver": "ocdbt", "base": f"file://{store}"}).result()
    return {key.decode() for key in kvstore.list().result()}


@pytest.mark.slow
def test_each_process_reports_its_devices_and_its_column(two_processes, saved):
    _, reports = two_processes
    (_, _, saved_state), _ = saved
    columns = quietly(processes.by_process_here, saved_state)[0]
    assert [r["process"] for r in reports] == [0, 1]
    assert reports[0]["devices"] == [0, 1, 2, 3]
    assert reports[1]["devices"] == [2048, 2049, 2050, 2051]
    assert [r["writes"] for r in reports] == columns


@pytest.mark.slow
def test_each_process_store_holds_the_chunks_of_its_own_blocks(two_processes):
    path, _ = two_processes
    stores = sorted((path / "state").glob("ocdbt.process_*"))
    assert [s.name for s in stores] == ["ocdbt.process_0", "ocdbt.process_1"]
    mine = [chunk_keys(s) for s in stores]
    chunks = [{k for k in keys if "/c" in k} for keys in mine]
    # up.kernel (32, 128) is stored in chunks (0, 0) ... (0, 7) of 32 x 16: the first
    # process wrote the first four, the second the last four.
    kernel = "model.up.kernel.value/c/0/"
    assert {k for k in chunks[0] if k.startswith(kernel)} == {
        f"{kernel}{i}" for i in range(4)
    }
    assert {k for k in chunks[1] if k.startswith(kernel)} == {
        f"{kernel}{i}" for i in range(4, 8)
    }
    assert not chunks[0] & chunks[1]  # no chunk written twice
    # Every chunk index names a block: the first half of them in process 0's store.
    for keys, half in zip(chunks, [range(4), range(4, 8)], strict=True):
        for key in keys:
            index = [int(i) for i in re.findall(r"/(\d+)", key.split("/c")[1])]
            if index:
                assert max(index) in half, key
    assert "optimizer.step.value/c" in chunks[0]
    assert "optimizer.step.value/c" not in chunks[1]
    # The checkpoint's own index sees both.
    assert chunks[0] | chunks[1] <= chunk_keys(path / "state")


@pytest.mark.slow
def test_one_process_restores_what_two_saved(two_processes, model_mesh):
    path, _ = two_processes
    data_mesh = jax.make_mesh((8,), ("data",), axis_types=(AxisType.Auto,))
    expected = state.state_of(*state.new_train_state())
    for mesh, specs in [(data_mesh, state.FSDP), (model_mesh, state.TENSOR_PARALLEL)]:
        model, optimizer = state.restore_train_state(path, mesh, specs)
        got = state.state_of(model, optimizer)
        for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(expected), strict=True):
            assert a.sharding.mesh == mesh
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
