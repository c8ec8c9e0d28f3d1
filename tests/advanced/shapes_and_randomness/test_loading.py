from pathlib import Path

import jax
import numpy as np
import pytest
from jax import P
from jax.sharding import NamedSharding

from snippets.advanced.shapes_and_randomness import loading

PAGE = (
    Path(__file__).resolve().parents[3]
    / "docs"
    / "advanced"
    / "shapes-and-randomness.md"
)
ROWS = (10 * np.arange(40)[:, None] + np.arange(6)).astype(np.float32)


def test_the_data_set_is_a_memory_mapped_file(capsys):
    path, data = loading.write_dataset()
    try:
        assert isinstance(data, np.memmap) and path.name == "features.npy"
        np.testing.assert_array_equal(data, ROWS)
        assert capsys.readouterr().out == "memmap (40, 6) float32\n"
    finally:
        del data
        path.unlink()
        path.parent.rmdir()


def test_each_device_reads_its_own_rows(page_mesh, dataset, capsys):
    batch, asked = loading.from_callback(page_mesh, dataset)
    assert str(jax.typeof(batch)) == "float32[16@x,6]"
    assert len(asked) == 8
    np.testing.assert_array_equal(batch, ROWS[:16])
    for shard in batch.addressable_shards:
        d = shard.device.id
        assert shard.index[0] == slice(2 * d, 2 * d + 2)
        np.testing.assert_array_equal(shard.data, ROWS[2 * d : 2 * d + 2])
    assert sorted(index[0].start for index in asked) == list(range(0, 16, 2))
    assert capsys.readouterr().out == (
        "float32[16@x,6]  calls: 8\n"
        "cpu:0: rows 0-1, first column [ 0. 10.]\n"
        "cpu:1: rows 2-3, first column [20. 30.]\n"
        "cpu:2: rows 4-5, first column [40. 50.]\n"
    )


def test_the_callback_runs_once_per_device_even_for_copies(mesh, dataset):
    """The prose: devices holding the same block each call the function."""
    asked = []

    def read(index):
        asked.append(index)
        return dataset[index]

    batch = jax.make_array_from_callback((16, 6), NamedSharding(mesh, P("x")), read)
    assert len(asked) == 8  # 8 devices ...
    assert {index[0] for index in asked} == {slice(0, 8), slice(8, 16)}  # ... 2 blocks
    np.testing.assert_array_equal(batch, ROWS[:16])


def test_process_local_data_is_the_whole_batch_in_one_process(
    page_mesh, dataset, capsys
):
    batch = loading.from_process_local(page_mesh, dataset)
    assert str(jax.typeof(batch)) == "float32[16@x,6]"
    np.testing.assert_array_equal(batch, ROWS[:16])
    assert capsys.readouterr().out == "float32[16@x,6]  same rows: True\n"
    # What the annotation points to: this process's devices' indices, all 16 rows here.
    wanted = batch.sharding.addressable_devices_indices_map((16, 6))
    assert jax.process_count() == 1 and len(wanted) == 8
    assert sorted(index[0].start for index in wanted.values()) == list(range(0, 16, 2))


def batches_of(data, size, sharding, seed):
    return [
        (np.asarray(batch), np.asarray(mask), batch, mask)
        for batch, mask in loading.global_batches(data, size, sharding, seed=seed)
    ]


def test_the_loader_covers_every_row_once_in_the_seeds_order(page_mesh, dataset):
    by_rows = NamedSharding(page_mesh, P("x"))
    got = batches_of(dataset, 16, by_rows, seed=1)
    assert [mask.sum() for _, mask, _, _ in got] == [16, 16, 8]
    order = np.random.default_rng(1).permutation(40)
    for i, (batch, mask, placed, placed_mask) in enumerate(got):
        assert str(jax.typeof(placed)) == "float32[16@x,6]"
        assert str(jax.typeof(placed_mask)) == "bool[16@x]"
        ids = order[16 * i : 16 * (i + 1)]
        np.testing.assert_array_equal(batch[mask], ROWS[ids])  # in the shuffled order
        np.testing.assert_array_equal(batch[~mask], 0)  # padding is zeros
        assert mask.tolist() == [True] * len(ids) + [False] * (16 - len(ids))
    # Another seed, another order; the same seed, the same batches.
    again = batches_of(dataset, 16, by_rows, seed=1)
    assert all(np.array_equal(a[0], b[0]) for a, b in zip(got, again, strict=True))
    other = batches_of(dataset, 16, by_rows, seed=2)
    assert not np.array_equal(got[0][0], other[0][0])


def test_the_loader_works_on_the_grid(mesh, dataset):
    got = batches_of(dataset, 8, NamedSharding(mesh, P(("x", "y"))), seed=0)
    assert len(got) == 5 and all(mask.all() for _, mask, _, _ in got)
    seen = np.concatenate([batch for batch, *_ in got])
    assert sorted((seen[:, 0] // 10).astype(int).tolist()) == list(range(40))


def test_the_loader_checks_its_arguments(page_mesh, dataset):
    by_rows = NamedSharding(page_mesh, P("x"))
    with pytest.raises(ValueError, match=r"batch_size of 1 or more .* got 0 and"):
        next(loading.global_batches(dataset, 0, by_rows))
    by_columns = NamedSharding(page_mesh, P(None, "x"))
    with pytest.raises(
        ValueError, match=r"splits rows only; got 16 and P\(None, 'x'\)"
    ):
        next(loading.global_batches(dataset, 16, by_columns))
    with pytest.raises(ValueError, match=r"over 8 devices: pad it from 10 to 16"):
        next(loading.global_batches(dataset, 10, by_rows))


def test_the_page_prints_three_batches(page_mesh, dataset, capsys):
    seen = loading.run_loader(page_mesh, dataset)
    assert sorted(seen) == list(range(40))
    assert capsys.readouterr().out == (
        "float32[16@x,6] bool[16@x] real rows: 16\n"
        "float32[16@x,6] bool[16@x] real rows: 16\n"
        "float32[16@x,6] bool[16@x] real rows: 8\n"
        "every row once: True\n"
    )
    page = " ".join(PAGE.read_text().split())
    assert (
        "40 rows in batches of 16 make two full batches and a third with 8 real rows"
        in page
    )
    assert "The function ran once per device, eight times" in page
