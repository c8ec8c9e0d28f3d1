import re

import jax
import numpy as np
import pytest
from flax import nnx
from jax import P
from jax.sharding import AxisType, SingleDeviceSharding

from snippets.hlo import count_collectives
from snippets.models import D_HIDDEN, D_IN, D_OUT, MLP
from snippets.training.tensor_parallel import column_row


def shard_shapes(model):
    return {
        ".".join(path): param[...].addressable_shards[0].data.shape
        for path, param in nnx.iter_graph(model)
        if isinstance(param, nnx.Param)
    }


def test_one_auto_axis_named_model_over_all_eight_devices(model_mesh, devices):
    assert dict(model_mesh.shape) == {"model": 8}
    assert model_mesh.axis_types == (AxisType.Auto,)
    assert sorted(model_mesh.device_ids.ravel()) == [d.id for d in devices]


def test_up_is_split_by_columns_and_down_by_rows(placed, capsys):
    specs, model = placed
    assert specs == {
        "up.kernel": P(None, "model"),
        "up.bias": P("model"),
        "down.kernel": P("model", None),
        "down.bias": P(),
    }
    assert model.up.kernel[...].sharding.spec == P(None, "model")
    assert model.down.kernel[...].sharding.spec == P("model", None)
    assert shard_shapes(model) == {
        "up.kernel": (32, 16),
        "up.bias": (16,),
        "down.kernel": (16, 8),
        "down.bias": (8,),
    }
    # Device d holds the same hidden units in up.kernel, up.bias and down.kernel.
    for i, device in enumerate(model.up.kernel[...].sharding.mesh.devices):
        cols = {s.device: s.index for s in model.up.kernel[...].addressable_shards}
        rows = {s.device: s.index for s in model.down.kernel[...].addressable_shards}
        assert cols[device][1] == rows[device][0] == slice(16 * i, 16 * (i + 1))
    # Moving the parameters changed where they live, not their values.
    fresh = MLP(D_IN, D_HIDDEN, D_OUT, rngs=nnx.Rngs(0))
    for a, b in zip(
        jax.tree.leaves(nnx.state(model, nnx.Param)),
        jax.tree.leaves(nnx.state(fresh, nnx.Param)),
        strict=True,
    ):
        np.testing.assert_array_equal(a, b)
    column_row.print_params(model)
    table = [re.split(r"\s{2,}", line) for line in capsys.readouterr().out.splitlines()]
    assert table == [
        ["parameter", "shape", "spec", "per device"],
        ["down.bias", "(8,)", "P()", "(8,)"],
        ["down.kernel", "(128, 8)", "P('model', None)", "(16, 8)"],
        ["up.bias", "(128,)", "P('model',)", "(16,)"],
        ["up.kernel", "(32, 128)", "P(None, 'model')", "(32, 16)"],
    ]


def test_drawings_show_eight_blocks_each(placed, capsys):
    column_row.draw_kernels(placed[1])
    out = capsys.readouterr().out
    assert "up.kernel (32, 128): columns split" in out
    assert "down.kernel (128, 8): rows split" in out
    for d in range(8):
        assert out.count(f"CPU {d}") == 1  # once per drawing: rows of down
    # up.kernel's labels are split over two lines ("CPU" / "d"), down's are not.
    assert out.count("CPU") == 16


def test_hidden_activation_stays_split_with_no_communication(placed, hidden, capsys):
    x, up, h = hidden
    assert count_collectives(up) == {}
    assert x.sharding.spec == P()
    assert h.sharding.spec == P(None, "model")
    assert {s.data.shape for s in h.addressable_shards} == {(64, 16)}
    model = placed[1]
    expected = np.maximum(
        np.asarray(x) @ np.asarray(model.up.kernel[...])
        + np.asarray(model.up.bias[...]),
        0,
    )
    np.testing.assert_allclose(h, expected, rtol=1e-5, atol=1e-6)


def test_forward_is_one_all_reduce_of_the_output(placed, hidden, capsys):
    x = hidden[0]
    compiled, y, expected = column_row.forward(placed[1], x)
    assert count_collectives(compiled) == {"all-reduce": 1}
    assert re.search(r"= f32\[64,8\]\S* all-reduce\(", compiled.as_text())
    assert y.sharding.spec == P()
    assert isinstance(expected.sharding, SingleDeviceSharding)
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "all-reduce          1"
    assert lines[1] == "output: (64, 8) P()"
    assert lines[2] == "within 1e-05 of one device: True"


def test_explicit_axes_refuse_the_row_parallel_product(placed, hidden, capsys):
    out = column_row.explicit_axes_refuse(placed[0], hidden[0])
    assert capsys.readouterr().out == (
        "ShardingTypeError: Contracting dimensions are sharded and it is ambiguous how "
        "the output should be sharded. Please specify the output sharding via the "
        "`out_sharding` parameter. Got lhs_contracting_spec=('model',) and "
        "rhs_contracting_spec=('model',)\n"
        "output: float32[64,8]\n"
        "all-reduce          1\n"
    )
    # Answered with out_sharding=P(): the one-device forward pass, whole on every device.
    reference = MLP(D_IN, D_HIDDEN, D_OUT, rngs=nnx.Rngs(0))(np.asarray(hidden[0]))
    np.testing.assert_allclose(out, reference, rtol=1e-5, atol=1e-6)
    assert out.sharding.is_fully_replicated and out.shape == (64, 8)


def test_a_hidden_size_of_100_is_refused_with_what_to_change(
    placed, model_mesh, capsys
):
    column_row.hidden_not_divisible(placed[0], model_mesh)
    assert capsys.readouterr().out == (
        "ValueError: down.kernel has shape (100, 8): its dimension 0 (100) does not "
        "split evenly over mesh axis 'model' (8 devices). Make it a multiple of 8, or "
        "split it over a smaller mesh axis.\n"
    )


def test_rounding_the_hidden_size_up_to_104_works(placed, model_mesh):
    wider = column_row.hidden_rounded_up(placed[0], model_mesh)
    assert wider.up.kernel[...].shape == (32, 104)
    assert shard_shapes(wider) == {
        "up.kernel": (32, 13),
        "up.bias": (13,),
        "down.kernel": (13, 8),
        "down.bias": (8,),
    }


def test_shard_params_checks_everything_before_moving_anything(model_mesh, mesh):
    odd = nnx.eval_shape(lambda: MLP(D_IN, 100, D_OUT, rngs=nnx.Rngs(0)))
    specs = {"up.kernel": P(None, "model"), "up.bias": P("model")}
    with pytest.raises(ValueError, match=r"No spec for \['down.bias', 'down.kernel'\]"):
        column_row.shard_params(odd, model_mesh, specs)
    specs |= {"down.kernel": P("model", None), "down.bias": P()}
    with pytest.raises(ValueError, match=r"down\.kernel has shape \(100, 8\)"):
        column_row.shard_params(odd, model_mesh, specs)
    model = MLP(D_IN, D_HIDDEN, D_OUT, rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match=r"P\(None, None\) has more entries"):
        column_row.shard_params(model, model_mesh, specs | {"up.bias": P(None, None)})
    with pytest.raises(ValueError, match="model"):  # the 2 x 4 mesh has no "model"
        column_row.shard_params(model, mesh, specs)
    # down.bias and down.kernel were checked and fine before up.bias failed, but
    # nothing moved.
    for param in jax.tree.leaves(nnx.state(model, nnx.Param)):
        assert isinstance(param.sharding, SingleDeviceSharding)


def test_shard_params_splits_over_two_axes_together(mesh):
    model = MLP(D_IN, D_HIDDEN, D_OUT, rngs=nnx.Rngs(0))
    column_row.shard_params(
        model,
        mesh,
        {
            "up.kernel": P(None, ("x", "y")),
            "up.bias": P(("x", "y")),
            "down.kernel": P(("x", "y"), None),
            "down.bias": P("y"),
        },
    )
    assert shard_shapes(model)["up.kernel"] == (32, 16)
    assert shard_shapes(model)["down.bias"] == (2,)
    bad = MLP(D_IN, 100, D_OUT, rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match=r"over mesh axis 'x' and 'y' \(8 devices\)"):
        column_row.shard_params(
            bad,
            mesh,
            {"up.kernel": P(None, ("x", "y"))}
            | {"up.bias": P(), "down.kernel": P(), "down.bias": P()},
        )
