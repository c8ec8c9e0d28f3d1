import json
import multiprocessing
from pathlib import Path

import grain
import jax
import numpy as np
import pytest
from jax import P
from jax.sharding import NamedSharding
from orbax.checkpoint import v1 as ocp

from snippets.advanced.checkpoints import loader, state
from tests.advanced.checkpoints.conftest import quietly

PAGE = Path(__file__).resolve().parents[3] / "docs" / "advanced" / "checkpoints.md"


@pytest.fixture(scope="package")
def loader_dir(tmp_path_factory) -> Path:
    return Path(tmp_path_factory.mktemp("loader"))


@pytest.fixture(scope="package")
def loader_run(placed, loader_dir):
    """The page's run: (kept_on, kept_rows, resumed, resumed_rows), and the printout."""
    (data_mesh, _, _), _ = placed
    return quietly(loader.resume_exactly, data_mesh, loader_dir)


def fresh_loader():
    return iter(
        loader.make_loader(
            loader.examples(loader.ROWS),
            loader.GLOBAL_BATCH,
            grain.sharding.ShardByJaxProcess(),
        )
    )


def test_the_resumed_run_reads_the_same_rows_and_computes_the_same_losses(loader_run):
    (kept_on, kept_rows, resumed, resumed_rows), printed = loader_run
    assert len(kept_on) == len(resumed) == 3
    # one process: its rows are the whole global batch
    assert [len(rows) for rows in kept_rows] == [loader.GLOBAL_BATCH] * 3
    assert resumed_rows == kept_rows
    assert resumed == kept_on  # bitwise: the same floats
    assert printed.splitlines()[-2:] == [
        "the same rows as the run that kept on: True",
        "the same losses, bitwise: True",
    ]


def test_the_printout_names_the_parts_and_the_rows(loader_run):
    (_, kept_rows, _, _), printed = loader_run
    lines = printed.splitlines()
    assert lines[0] == "parts: ['data', 'rng', 'state']"
    assert lines[1] == "data/ holds: ['process_0-of-1.json']"
    assert lines[3].strip() == str([rows[:4] for rows in kept_rows])


def resume_from(placed, loader_dir, *, data=None, key=None):
    """Resume from the page's checkpoint, replacing the loader or the key if given."""
    (data_mesh, _, _), _ = placed
    model, optimizer, saved_key, saved_data = loader.load_checkpoint(
        loader_dir / "with-data", data_mesh, state.FSDP, fresh_loader()
    )
    split = NamedSharding(data_mesh, P("data"))
    return loader.train_on(
        model,
        optimizer,
        saved_data if data is None else data,
        saved_key if key is None else key,
        3,
        split,
    )


def test_without_the_restored_position_other_rows_and_other_losses(
    loader_run, placed, loader_dir
):
    """Fails if the iterator's position is not restored: a fresh loader starts over."""
    (kept_on, kept_rows, _, _), _ = loader_run
    losses, rows, _ = resume_from(placed, loader_dir, data=fresh_loader())
    first = next(fresh_loader())["row"].tolist()
    assert rows[0] == first != kept_rows[0]
    assert max(abs(a - b) for a, b in zip(losses, kept_on, strict=True)) > 1e-4


def test_without_the_restored_key_the_same_rows_but_other_losses(
    loader_run, placed, loader_dir
):
    (kept_on, kept_rows, _, _), _ = loader_run
    (data_mesh, _, _), _ = placed
    # the run's first key, as a restart that did not save it would take
    other = jax.device_put(jax.random.key(1), NamedSharding(data_mesh, P()))
    losses, rows, _ = resume_from(placed, loader_dir, key=other)
    assert rows == kept_rows
    assert max(abs(a - b) for a, b in zip(losses, kept_on, strict=True)) > 1e-4


def test_the_loaded_iterator_is_the_one_passed_in_and_the_key_is_replicated(
    loader_run, placed, loader_dir
):
    (data_mesh, _, _), _ = placed
    fresh = fresh_loader()
    _, _, key, data = loader.load_checkpoint(
        loader_dir / "with-data", data_mesh, state.FSDP, fresh
    )
    assert data is fresh
    # Grain's iterators save and load themselves when Orbax asks
    assert isinstance(fresh, ocp.handlers.StatefulCheckpointable)
    replicated = NamedSharding(data_mesh, P())
    assert key.sharding.is_equivalent_to(replicated, 0)
    x = np.zeros((loader.GLOBAL_BATCH, loader.D_IN), np.float32)
    model, optimizer = state.sharded_train_state(data_mesh, state.FSDP)
    split = NamedSharding(data_mesh, P("data"))
    x = jax.device_put(x, split)
    y = jax.device_put(np.zeros((loader.GLOBAL_BATCH, loader.D_OUT), np.float32), split)
    _, next_key = loader.noisy_step(model, optimizer, x, y, key)
    assert next_key.sharding.is_equivalent_to(replicated, 0)


def test_the_checkpoint_holds_the_position_as_one_json_file_per_process(
    loader_run, loader_dir
):
    checkpoint = loader_dir / "with-data"
    parts = sorted(p.name for p in checkpoint.iterdir() if p.is_dir())
    assert parts == ["data", "rng", "state"]
    (position,) = (checkpoint / "data").iterdir()
    assert position.name == "process_0-of-1.json"
    assert isinstance(json.loads(position.read_text()), dict)


def test_each_process_saves_its_position_under_its_own_name(tmp_path, monkeypatch):
    """The page: in a run of two processes, process 1 writes process_1-of-2.json."""
    from grain._src.core import sharding

    monkeypatch.setattr(sharding, "get_process_index_and_count", lambda: (1, 2))
    ocp.save_checkpointables(tmp_path / "c", {"data": fresh_loader()})
    assert [p.name for p in (tmp_path / "c" / "data").iterdir()] == [
        "process_1-of-2.json"
    ]


def test_an_epoch_is_four_steps_and_step_4_starts_a_new_order(loader_run):
    (_, kept_rows, _, _), _ = loader_run
    data = fresh_loader()
    first_epoch = [next(data)["row"].tolist() for _ in range(4)]
    assert sorted(row for rows in first_epoch for row in rows) == list(range(64))
    assert kept_rows[0] == first_epoch[3]  # step 3: the last batch of epoch 1
    second = kept_rows[1] + kept_rows[2]  # steps 4 and 5: the next epoch's first rows
    assert len(set(second)) == len(second)
    assert second != first_epoch[0] + first_epoch[1]


def test_the_loader_reads_in_this_process(devices):
    data = fresh_loader()
    next(data)
    assert multiprocessing.active_children() == []


def test_shard_by_jax_process_is_process_0_of_1_here(devices):
    shard = grain.sharding.ShardByJaxProcess()
    assert (shard.shard_index, shard.shard_count) == (0, 1)
    assert (jax.process_index(), jax.process_count()) == (0, 1)


@pytest.mark.parametrize("processes", [2, 4])
def test_each_process_reads_its_own_block_in_its_own_order(processes):
    source = loader.examples(loader.ROWS)
    read = loader.rows_by_process(source, loader.GLOBAL_BATCH, processes)
    block = loader.ROWS // processes
    everything = sorted(row for rows in read for row in rows)
    assert everything == list(range(loader.ROWS))  # disjoint and covering
    for index, rows in enumerate(read):
        assert sorted(rows) == list(range(index * block, (index + 1) * block))
        assert rows != sorted(rows)  # shuffled
    shard = grain.sharding.ShardOptions(0, processes)
    batch = next(iter(loader.make_loader(source, loader.GLOBAL_BATCH, shard)))
    assert len(batch["row"]) == loader.GLOBAL_BATCH // processes


def test_the_shards_printout(devices):
    read, printed = quietly(loader.show_shards)
    lines = printed.splitlines()
    assert lines[0] == "process 0 of 2 reads rows 0..31:"
    assert lines[2] == "process 1 of 2 reads rows 32..63:"
    assert lines[1].split() == [*str(read[0][:8]).split(), "..."]
    assert lines[4] == "every row read once, by one process: True"


@pytest.mark.parametrize(
    ("rows", "batch", "processes", "says"),
    [
        (64, 16, 3, "64 rows do not split evenly over 3 processes"),
        (64, 18, 4, "a global batch of 18 rows does not split over 4 processes"),
        (64, 24, 2, "each process reads 32 rows per epoch, which batches of 12"),
    ],
)
def test_sizes_that_do_not_split_are_refused(rows, batch, processes, says):
    with pytest.raises(ValueError, match=says) as err:
        loader.check_sizes(rows, batch, processes)
    assert "Use" in str(err.value) or "use" in str(err.value)


def test_a_checkpoint_without_the_position_is_refused(placed, saved):
    (data_mesh, _, _), _ = placed
    (_, directory, _), _ = saved
    with pytest.raises(ValueError, match=r"has no \['data', 'rng'\].*save_checkpoint"):
        loader.load_checkpoint(
            directory / "fsdp", data_mesh, state.FSDP, fresh_loader()
        )


def test_the_bad_input_printout(placed, saved):
    (data_mesh, _, _), _ = placed
    (_, directory, _), _ = saved
    _, printed = quietly(loader.bad_input, data_mesh, directory)
    lines = printed.splitlines()
    assert len(lines) == 4 and all(line.startswith("ValueError: ") for line in lines)
    assert "has no ['data', 'rng'] (it holds ['state'])" in lines[3]


def grain_rows(rows, shard, count):
    sampler = grain.samplers.IndexSampler(
        rows, shard_options=shard, shuffle=True, seed=0, num_epochs=None
    )
    data = grain.DataLoader(
        data_source=[{"row": i} for i in range(rows)], sampler=sampler, worker_count=0
    )
    it = iter(data)
    return [int(next(it)["row"]) for _ in range(count)]


def test_grain_shares_uneven_rows_unevenly_or_drops_some():
    """What check_sizes' first message says Grain would do with 64 rows over 3."""
    # Without drop_remainder: process 0's epoch is 22 rows, process 1's 21.
    assert len(set(grain_rows(64, grain.sharding.ShardOptions(0, 3), 22))) == 22
    assert len(set(grain_rows(64, grain.sharding.ShardOptions(1, 3), 22))) == 21
    # With it, the three shares leave one row unread.
    read = set()
    for i in range(3):
        shard = grain.sharding.ShardOptions(i, 3, drop_remainder=True)
        read |= set(grain_rows(64, shard, 21))
    assert len(read) == 63


def test_grain_batches_across_an_epoch_boundary_and_can_repeat_a_row():
    """What check_sizes' last message says: 32 rows in batches of 12."""
    sampler = grain.samplers.IndexSampler(
        32, shard_options=grain.sharding.NoSharding(), shuffle=True, seed=0
    )
    data = grain.DataLoader(
        data_source=[{"row": i} for i in range(32)],
        sampler=sampler,
        operations=[grain.transforms.Batch(12, drop_remainder=True)],
        worker_count=0,
    )
    it = iter(data)
    batches = [next(it)["row"].tolist() for _ in range(3)]
    assert len(set(batches[2])) < 12  # rows 24..31 of epoch 1, then 4 of epoch 2


def test_the_prose_says_what_the_tests_check():
    text = " ".join(PAGE.read_text(encoding="utf-8").split())
    assert "The tests check that either one changes the losses." in text
    assert "restarted from the run's first key" in text
    assert "an epoch is four steps" in text
    assert loader.ROWS == 64 and loader.GLOBAL_BATCH == 16
