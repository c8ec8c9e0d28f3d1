import jax
import numpy as np
import pytest
from jax import P

from snippets.training.pipeline import stages as st


def numpy_mlp(stage, x):
    up, down = stage.up, stage.down
    h = np.maximum(x @ np.asarray(up.kernel[...]) + np.asarray(up.bias[...]), 0)
    return h @ np.asarray(down.kernel[...]) + np.asarray(down.bias[...])


def test_eight_stages_of_32_to_32_and_the_sequential_run(model, capsys):
    stages, x, expected = model
    assert len(stages) == 8
    for stage in stages:
        assert stage.up.kernel.shape == (32, 128)
        assert stage.down.kernel.shape == (128, 32)
    # Each stage has its own weights, drawn from one Rngs.
    assert not np.allclose(stages[0].up.kernel[...], stages[1].up.kernel[...])
    want = np.asarray(x)
    for stage in stages:
        want = numpy_mlp(stage, want)
    np.testing.assert_allclose(expected, want, rtol=1e-5, atol=1e-5)


def test_the_sequential_block_prints_the_shapes(capsys):
    st.build_model()
    assert capsys.readouterr().out.splitlines() == [
        "8 stages, each (32, 128) then (128, 32)",
        "input (64, 32) -> output (64, 32)",
    ]


def test_each_device_holds_the_weights_of_one_stage(model, devices, capsys):
    stages, _, _ = model
    mesh, _, params = st.show_placement(stages)
    assert dict(mesh.shape) == {"stage": 8}
    kernel = params["up"]["kernel"][...]
    assert kernel.sharding.spec == P("stage")
    assert str(jax.typeof(kernel)) == "float32[8@stage,32,128]"
    for leaf in jax.tree.leaves(params):
        assert leaf.sharding.spec == P("stage")
        assert leaf.shape[0] == 8
    for shard in kernel.addressable_shards:
        s = shard.index[0].start
        assert shard.device == devices[s]
        assert shard.data.shape == (1, 32, 128)
        np.testing.assert_array_equal(shard.data[0], stages[s].up.kernel[...])
    assert capsys.readouterr().out.splitlines() == [
        "Mesh('stage': 8, axis_types=(Explicit,))",
        "stacked up.kernel: float32[8@stage,32,128]",
        "  cpu:0 holds stage 0: (1, 32, 128)",
        "  cpu:1 holds stage 1: (1, 32, 128)",
        "  cpu:2 holds stage 2: (1, 32, 128)",
    ]


def test_fewer_stages_use_the_first_devices(model, devices):
    stages, _, _ = model
    mesh, _, params = st.place_stages(stages[:4])
    assert dict(mesh.shape) == {"stage": 4}
    assert list(mesh.devices) == devices[:4]
    assert {s.device for s in params["down"]["bias"][...].addressable_shards} == set(
        devices[:4]
    )


def test_more_stages_than_devices_is_refused(capsys):
    st.too_many_stages()
    assert capsys.readouterr().out.splitlines() == [
        "ValueError: 12 pipeline stages need 12 devices, but there are only 8: use "
        "at most 8 stages, or put several layers in each stage."
    ]


def test_make_stages_needs_at_least_one():
    with pytest.raises(ValueError, match="need at least one stage, got 0"):
        st.make_stages(0)
