import jax
import numpy as np
import pytest
from jax import P
from jax.sharding import AxisType, NamedSharding

from snippets.models import batches
from snippets.training.multi_host import worker


@pytest.fixture(scope="module")
def data_mesh(devices):
    return jax.make_mesh((8,), ("data",), axis_types=(AxisType.Explicit,))


def test_dataset_stacks_the_models_batches(data):
    x, y = data
    assert x.shape == (5, 64, 32) and y.shape == (5, 64, 8)
    assert isinstance(x, np.ndarray)
    for step, (xb, yb) in enumerate(batches(5, 64)):
        np.testing.assert_array_equal(x[step], xb)
        np.testing.assert_array_equal(y[step], yb)


def test_dataset_reads_the_same_arrays_from_files(data, tmp_path):
    x, y = data
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    x2, y2 = worker.dataset(5, 64, str(tmp_path))
    np.testing.assert_array_equal(x2, x)
    np.testing.assert_array_equal(y2, y)


def test_dataset_holds_only_the_rows_asked_for(data, tmp_path):
    """A process's arrays are its rows of every batch, copied out of the mapped files:
    nothing of the other rows stays referenced."""
    x, y = data
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    for path in (str(tmp_path), None):
        x2, y2 = worker.dataset(5, 64, path, rows=slice(32, 64))
        assert x2.shape == (5, 32, 32) and y2.shape == (5, 32, 8)
        np.testing.assert_array_equal(x2, x[:, 32:])
        np.testing.assert_array_equal(y2, y[:, 32:])
        assert x2.base is None or x2.base.shape == x2.shape  # its own memory
        assert not isinstance(x2, np.memmap) and not isinstance(y2, np.memmap)


def test_one_process_supplies_the_whole_global_batch(data, data_mesh):
    x, y = data
    assert worker.my_rows(data_mesh, 64) == slice(0, 64)
    xg, yg = worker.global_batch(data_mesh, x[0], y[0], 64)
    assert xg.shape == (64, 32) and yg.shape == (64, 8)
    assert xg.sharding == NamedSharding(data_mesh, P("data"))
    assert [s.data.shape for s in xg.addressable_shards] == [(8, 32)] * 8
    placed = jax.device_put(x[0], NamedSharding(data_mesh, P("data")))
    for a, b in zip(xg.addressable_shards, placed.addressable_shards, strict=True):
        assert a.device == b.device and a.index == b.index
        np.testing.assert_array_equal(a.data, b.data)
    np.testing.assert_array_equal(yg, y[0])


def test_a_batch_the_devices_cannot_share_is_refused(data_mesh):
    with pytest.raises(ValueError) as err:
        worker.my_rows(data_mesh, 60)
    assert str(err.value) == (
        "a batch of 60 rows cannot be split over the 8 devices of mesh axis 'data': "
        "use a batch that is a multiple of 8."
    )


def test_train_in_one_process_matches_the_reference(single_run):
    (losses, weights, ref_losses, ref_model), _ = single_run
    assert len(losses) == 5
    np.testing.assert_allclose(losses, ref_losses, rtol=0, atol=1e-5)
    ref = worker.named_weights(ref_model)
    assert (
        set(weights) == set(ref) == {"up.kernel", "up.bias", "down.kernel", "down.bias"}
    )
    for name in ref:
        assert weights[name].shape == ref[name].shape
        np.testing.assert_allclose(weights[name], ref[name], rtol=0, atol=1e-5)


def test_the_command_line_checks_the_process_id(capsys):
    with pytest.raises(SystemExit) as exit_:
        worker.main(["--process-id", "2", "--port", "1", "--out", "x.npz"])
    assert exit_.value.code == 2
    assert "--process-id must be in 0..1" in capsys.readouterr().err


def as_if_this_process_held(monkeypatch, device_ids):
    """Make the sharding report only `device_ids` as this process's, as in a multi-process
    run, so that the rows a process loads can be checked in one process."""
    real = NamedSharding.addressable_devices_indices_map

    def held(self, shape):
        return {d: i for d, i in real(self, shape).items() if d.id in device_ids}

    monkeypatch.setattr(NamedSharding, "addressable_devices_indices_map", held)
    captured = []  # what the process would hand to make_array_from_process_local_data
    monkeypatch.setattr(
        jax,
        "make_array_from_process_local_data",
        lambda sharding, local, shape: captured.append(local),
    )
    return captured


def test_a_process_loads_the_rows_its_devices_hold_wherever_they_sit(data, monkeypatch):
    x, _ = data
    # Devices 4 to 7 first along "data": a process holding them holds rows 0 to 31.
    order = [jax.devices()[i] for i in (4, 5, 6, 7, 0, 1, 2, 3)]
    mesh = jax.make_mesh(
        (8,), ("data",), axis_types=(AxisType.Explicit,), devices=order
    )
    captured = as_if_this_process_held(monkeypatch, {4, 5, 6, 7})
    rows = worker.my_rows(mesh, 64)
    assert rows == slice(0, 32)
    mine, _ = worker.dataset(5, 64, rows=rows)
    worker.global_batch(mesh, mine[0], mine[0], 64)
    np.testing.assert_array_equal(captured[0], x[0][:32])
    assert captured[0].shape == (32, 32)  # its rows only, not the whole batch


def test_a_process_whose_rows_are_not_together_is_told_what_to_change(
    monkeypatch,
):
    order = [jax.devices()[i] for i in (0, 4, 1, 5, 2, 6, 3, 7)]
    mesh = jax.make_mesh(
        (8,), ("data",), axis_types=(AxisType.Explicit,), devices=order
    )
    as_if_this_process_held(monkeypatch, {0, 1, 2, 3})
    with pytest.raises(ValueError, match="rows that are not next to each other"):
        worker.my_rows(mesh, 64)
