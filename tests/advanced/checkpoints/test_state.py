import re
from pathlib import Path

import jax
import numpy as np
import pytest
from flax import nnx
from jax import P
from jax.sharding import AxisType, NamedSharding
from orbax.checkpoint import v1 as ocp

from snippets.advanced.checkpoints import state

PAGE = Path(__file__).resolve().parents[3] / "docs" / "advanced" / "checkpoints.md"

# name -> (shape, FSDP block on 8 devices, tensor-parallel block on 4 devices)
PARAMS = {
    "down.bias": ((8,), (1,), (8,)),
    "down.kernel": ((128, 8), (16, 8), (32, 8)),
    "up.bias": ((128,), (16,), (32,)),
    "up.kernel": ((32, 128), (32, 16), (32, 32)),
}
PREFIXES = ("model.", "optimizer.opt_state.0.mu.", "optimizer.opt_state.0.nu.")
COUNTS = ("optimizer.opt_state.0.count", "optimizer.step")


def arrays(model, optimizer) -> dict[str, jax.Array]:
    return {
        state.array_name(path): array
        for path, array in jax.tree.leaves_with_path(state.state_of(model, optimizer))
    }


def unsharded() -> dict[str, np.ndarray]:
    """The same train state on one device: what every layout must hold."""
    return {k: np.asarray(v) for k, v in arrays(*state.new_train_state()).items()}


def expected_layout(specs, block_column: int) -> dict[str, tuple]:
    layout = {name: (P(), ()) for name in COUNTS}
    for name, shapes in PARAMS.items():
        for prefix in PREFIXES:
            layout[prefix + name] = (specs[name], shapes[block_column])
    return layout


def layout_of(found: dict[str, jax.Array]) -> dict[str, tuple]:
    return {
        name: (array.sharding.spec, array.addressable_shards[0].data.shape)
        for name, array in found.items()
    }


def test_every_array_of_the_fsdp_state_is_split_over_eight_devices(placed):
    (data_mesh, model, optimizer), _ = placed
    found = arrays(model, optimizer)
    assert layout_of(found) == expected_layout(state.FSDP, 1)
    for name, array in found.items():
        assert array.sharding.mesh == data_mesh, name
        blocks = {s.data.shape for s in array.addressable_shards}
        assert len(blocks) == 1, name  # every device holds a block of one shape


def test_placing_changes_no_value(placed):
    (_, model, optimizer), _ = placed
    expected = unsharded()
    for name, array in arrays(model, optimizer).items():
        np.testing.assert_array_equal(np.asarray(array), expected[name], err_msg=name)


def test_the_printed_table_lists_every_array(placed):
    _, printed = placed
    rows = [re.split(r"\s{2,}", line.strip()) for line in printed.splitlines()]
    assert rows[0] == ["array", "shape", "spec", "per device", "devices"]
    assert len(rows) == 1 + 14
    assert ["model.up.kernel", "(32, 128)", "P(None, 'data')", "(32, 16)", "8"] in rows
    assert ["optimizer.step", "()", "P()", "()", "8"] in rows


def test_shardings_for_gives_the_moments_their_parameters_spec(placed):
    (data_mesh, model, optimizer), _ = placed
    shardings = state.shardings_for(
        state.state_of(model, optimizer), data_mesh, state.FSDP
    )
    by_name = {
        state.array_name(path): sharding
        for path, sharding in jax.tree.leaves_with_path(shardings)
    }
    assert by_name["optimizer.opt_state.0.nu.up.kernel"] == NamedSharding(
        data_mesh, P(None, "data")
    )
    assert by_name["optimizer.opt_state.0.count"] == NamedSharding(data_mesh, P())


@pytest.mark.parametrize(
    ("specs", "message"),
    [
        (
            {"up.kernal": P()},
            r"specs name \['up.kernal'\], but no array of the state is called that",
        ),
        (
            {"up.bias": P("data", None)},
            r"P\('data', None\) has 2 entries but model.up.bias has shape \(128,\): "
            r"give it at most 1, one per dimension",
        ),
        (
            {"up.kernel": P(None, "model")},
            r"names mesh axis 'model', but the mesh has axes \('data',\)",
        ),
        (
            {"down.kernel": P(None, "data")},
            r"model.down.kernel has shape \(128, 8\): its dimension 1 \(8\) does not "
            r"split evenly over 3 devices",
        ),
    ],
)
def test_shardings_for_says_what_to_change(specs, message):
    mesh = jax.make_mesh(
        (3,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:3]
    )
    model, optimizer = nnx.eval_shape(state.new_train_state)
    with pytest.raises(ValueError, match=message):
        state.shardings_for(state.state_of(model, optimizer), mesh, specs)


def test_the_listing_shows_orbax_layout_with_data_files_counted(saved):
    (_, directory, _), listing = saved
    assert listing.splitlines() == [
        "_CHECKPOINT_METADATA",
        "commit_success.txt",
        "orbax.checkpoint",
        "state/_METADATA",
        "state/_sharding",
        "state/manifest.ocdbt",
        "state/array_metadatas/process_0",
        "state/d/                     1 data file(s)",
        "state/ocdbt.process_0/manifest.ocdbt",
        "state/ocdbt.process_0/d/     1 data file(s)",
    ]
    assert not list(directory.glob("*.orbax-checkpoint-tmp*"))  # renamed when done
    assert (directory / "fsdp" / "orbax.checkpoint").stat().st_size == 0


def test_the_stored_arrays_are_whole_in_chunks_of_one_devices_block(saved, capsys):
    (_, directory, _), _ = saved
    stored = ocp.metadata(directory / "fsdp").metadata
    for name, (shape, block, _) in PARAMS.items():
        for prefix in PREFIXES:
            keys = [*prefix.rstrip(".").split("."), *name.split("."), "value"]
            meta = stored
            for key in keys:
                meta = meta[key]
            assert meta.shape == shape
            assert meta.storage_metadata.chunk_shape == block
    state.stored(directory)
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert rows == [
        ["array", "shape", "dtype", "chunks", "of"],
        ["model.down.bias", "(8,)", "float32", "(1,)"],
        ["model.down.kernel", "(128,", "8)", "float32", "(16,", "8)"],
        ["model.up.bias", "(128,)", "float32", "(16,)"],
        ["model.up.kernel", "(32,", "128)", "float32", "(32,", "16)"],
    ]


def test_the_restore_lays_out_every_array_for_tensor_parallelism(restored, devices):
    (model_mesh, model, optimizer), printed = restored
    found = arrays(model, optimizer)
    assert layout_of(found) == expected_layout(state.TENSOR_PARALLEL, 2)
    for name, array in found.items():
        assert array.sharding.mesh == model_mesh, name
        assert array.sharding.device_set == set(devices[:4]), name
    assert (
        printed.splitlines()[-1] == "every array bitwise equal to the saved one: True"
    )


def test_the_restored_values_are_bitwise_the_saved_ones(restored):
    (_, model, optimizer), _ = restored
    expected = unsharded()
    for name, array in arrays(model, optimizer).items():
        np.testing.assert_array_equal(np.asarray(array), expected[name], err_msg=name)


def test_without_a_target_the_arrays_come_back_on_the_saved_layout(saved):
    """What the warning box of the page says: the old spec, the old eight devices."""
    (_, directory, _), _ = saved
    with pytest.warns(UserWarning, match="unsafe when restoring on a different"):
        as_saved = ocp.load(directory / "fsdp")
    kernel = as_saved["model"]["up"]["kernel"]["value"]
    assert kernel.sharding.spec == P(None, "data")
    assert len(kernel.sharding.device_set) == 8


def test_a_restore_onto_a_mesh_the_specs_do_not_fit_says_what_to_change(saved):
    (_, directory, _), _ = saved
    three = jax.make_mesh(
        (3,), ("model",), axis_types=(AxisType.Auto,), devices=jax.devices()[:3]
    )
    with pytest.raises(ValueError, match=r"its dimension 0 \(128\) does not split"):
        state.restore_train_state(directory / "fsdp", three, state.TENSOR_PARALLEL)


def test_the_prose_describes_the_printed_layouts():
    """Every number in the prose of the save and restore sections, from the tables."""
    text = " ".join(PAGE.read_text(encoding="utf-8").split())
    count = 4 + 2 * 4 + 2  # the parameters, their two moments, two step counts
    assert count == len(expected_layout(state.FSDP, 1))
    assert "Fourteen arrays: the four parameters, their two moments each" in text
    fsdp, tp = PARAMS["up.kernel"][1][1], PARAMS["up.kernel"][2][1]
    assert (fsdp, tp) == (16, 32)
    assert (
        f"`up.kernel` in blocks of {tp} columns where it was saved in blocks of {fsdp}"
        in text
    )
    assert "split in eight, and Adam's moments following" in text


def test_the_training_checkpointer_of_the_tip_takes_the_same_target(placed, tmp_path):
    """The page's tip: save(step, state), latest, load(step, abstract_state)."""
    (_, model, optimizer), _ = placed
    with ocp.training.Checkpointer(tmp_path / "run") as checkpointer:
        assert checkpointer.save(3, state.state_of(model, optimizer))
        assert checkpointer.latest.step == 3
        abstract = jax.tree.map(
            lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=a.sharding),
            state.state_of(model, optimizer),
        )
        loaded = checkpointer.load(3, abstract)
    kernel = loaded["model"]["up"]["kernel"][...]
    assert kernel.sharding.spec == P(None, "data")
    np.testing.assert_array_equal(np.asarray(kernel), np.asarray(model.up.kernel[...]))
    assert (tmp_path / "run" / "3").is_dir()
