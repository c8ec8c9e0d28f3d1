import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import P
from jax.sharding import AxisType, NamedSharding

from snippets.advanced.shapes_and_randomness import uneven
from snippets.hlo import count_collectives
from tests.advanced.shapes_and_randomness.conftest import quietly

PAGE = (
    Path(__file__).resolve().parents[3]
    / "docs"
    / "advanced"
    / "shapes-and-randomness.md"
)


def prose() -> str:
    return " ".join(PAGE.read_text().split())


def shard_rows(array) -> set[int]:
    return {s.data.shape[0] for s in array.addressable_shards}


def test_the_two_meshes_share_the_eight_devices(meshes, devices):
    mesh, auto_mesh = meshes
    assert dict(mesh.shape) == dict(auto_mesh.shape) == {"x": 8}
    assert mesh.axis_types == (AxisType.Explicit,)
    assert auto_mesh.axis_types == (AxisType.Auto,)
    assert list(mesh.devices) == list(auto_mesh.devices) == devices


def test_device_put_refuses_ten_over_eight(page_mesh, capsys):
    uneven.refused(page_mesh)
    assert capsys.readouterr().out == (
        "ValueError: Sharding spec ('x',) implies that array axis 0 is partitioned 8 "
        "times, but does not evenly divide the dimension size 10. Got shape: (10,) and "
        "sharding NamedSharding(mesh=AbstractMesh('x': 8, axis_types=(Explicit,), "
        "device_kind=cpu, num_cores=None, platform=cpu), spec=P('x',))\n"
    )


def test_jit_and_make_array_refuse_with_an_indivisible_error(page_mesh, capsys):
    """The prose: in_shardings, out_shardings and make_array_from_callback refuse too,
    with IndivisibleError, a ValueError."""
    rows = NamedSharding(page_mesh, P("x"))
    ten = np.arange(10.0)
    attempts = [
        lambda: jax.jit(lambda a: 2 * a, in_shardings=rows)(ten),
        lambda: jax.jit(lambda a: 2 * a, out_shardings=rows)(ten),
        lambda: jax.make_array_from_callback((10,), rows, lambda index: ten[index]),
    ]
    for attempt in attempts:
        with pytest.raises(ValueError, match="partitioned 8 times") as err:
            attempt()
        assert type(err.value).__name__ == "IndivisibleError"
    capsys.readouterr()  # JAX 0.12.0.1 also prints the raising line on its own: not shown
    page = prose()
    assert "refuses such `in_shardings` and `out_shardings` too, and so does" in page
    assert "`IndivisibleError`, a subclass of `ValueError`" in page


def test_inside_a_program_the_compiler_pads_ten_to_sixteen(auto_mesh, capsys):
    compiled = uneven.padded_inside(auto_mesh)
    assert compiled.cost_analysis()["transcendentals"] == 2.0  # ceil(10 / 8)
    assert count_collectives(compiled) == {"all-reduce": 1}
    assert re.search(r"= f32\[16\]\S* pad\(", compiled.as_text())
    ten = np.arange(10.0, dtype=np.float32)
    # cos(0) = 1: had a padded slot been summed, the total would be off by at least 1.
    np.testing.assert_allclose(compiled(ten), np.cos(ten).sum(), rtol=1e-5)
    assert capsys.readouterr().out == (
        "cosines per device: 2.0\n"
        "all-reduce          1\n"
        f"sum: {np.cos(ten).sum():.4f}   NumPy: {np.cos(ten).sum():.4f}\n"
    )


def test_a_padded_constraint_on_the_result_does_not_compile(auto_mesh):
    """The prose: the padding stays inside; on the result, compiling fails."""

    def cosines(a):
        return jax.lax.with_sharding_constraint(
            jnp.cos(a), NamedSharding(auto_mesh, P("x"))
        )

    with pytest.raises(ValueError) as err:
        jax.jit(cosines).lower(np.arange(10.0)).compile()
    assert type(err.value).__name__ == "IndivisibleError"


def test_replicating_the_batch_makes_every_device_compute_all_of_it(
    page_mesh, data, capsys
):
    batch, _, weights = data
    compiled, y = uneven.replicated(page_mesh, batch, weights)
    assert str(jax.typeof(y)) == "float32[10,64]"
    assert shard_rows(y) == {10} and len(y.addressable_shards) == 8
    assert count_collectives(compiled) == {}
    assert compiled.cost_analysis()["flops"] == 2 * 10 * 32 * 64
    np.testing.assert_allclose(y, np.tanh(batch @ weights), rtol=1e-5, atol=1e-6)
    assert capsys.readouterr().out == (
        "x: float32[10,32]   y: float32[10,64]\n"
        "rows of y per device: {10}\n"
        "collectives: none\n"
        "flops per device: 40960\n"
    )
    times = " \N{MULTIPLICATION SIGN} "
    assert f"(2{times}10{times}32{times}64)" in prose()


def test_slicing_on_auto_axes_gathers_and_replicates(auto_mesh, data, capsys):
    batch, _, weights = data
    _, padded, compiled, y, next_layer = uneven.slice_on_auto(auto_mesh, batch, weights)
    assert padded.shape == (16, 32)
    np.testing.assert_array_equal(padded[10:], 0)
    assert y.sharding.spec == P() and shard_rows(y) == {10}
    # The layer ran on each device's 2 rows, then all 16 rows went to every device.
    assert compiled.cost_analysis()["flops"] == 2 * 2 * 32 * 64
    assert count_collectives(compiled) == {"all-gather": 1}
    assert re.search(r"= f32\[16,64\]\S* all-gather\(", compiled.as_text())
    # The next layer starts from the whole of y on every device.
    assert next_layer.cost_analysis()["flops"] == 2 * 10 * 64 * 32
    assert count_collectives(next_layer) == {}
    np.testing.assert_allclose(y, np.tanh(batch @ weights), rtol=1e-5, atol=1e-6)
    assert capsys.readouterr().out == (
        "y: P()  rows per device: 10\n"
        "all-gather          1\n"
        "next layer, flops per device: 40960\n"
    )


def test_slicing_on_explicit_axes_is_a_type_error(page_mesh, auto_mesh, data, capsys):
    batch, _, weights = data
    forward_real_rows, padded, *_ = quietly(
        uneven.slice_on_auto, auto_mesh, batch, weights
    )
    uneven.slice_on_explicit(page_mesh, forward_real_rows, padded, weights)
    assert capsys.readouterr().out == (
        "ShardingTypeError: slicing on sharded dims where out dim (10) is not divisible "
        "by mesh axes (8) with spec (x) is not implemented. Got input type=f32[16@x,32] "
        "and output shape=(10, 32)\n"
    )


def test_check_divides_names_the_size_to_pad_to(page_mesh, data, capsys):
    uneven.checked(page_mesh, data[0])
    assert capsys.readouterr().out == (
        "ValueError: P('x',) splits dimension 0 of (10, 32) over 8 devices: "
        "pad it from 10 to 16.\n"
    )


def test_check_divides_accepts_what_divides_and_refuses_the_rest(page_mesh, mesh):
    uneven.check_divides((16, 32), P("x"), page_mesh)
    uneven.check_divides((10, 32), P(None, "x"), page_mesh)
    uneven.check_divides((10,), P(), page_mesh)
    uneven.check_divides((2, 12), P("x", "y"), mesh)  # the 2 x 4 mesh
    for wrong in (P("x", None), P("z")):  # longer than the shape; no axis "z"
        with pytest.raises(
            ValueError, match=r"does not fit shape \(16,\) on axes \('x',\)"
        ):
            uneven.check_divides((16,), wrong, page_mesh)
    with pytest.raises(ValueError, match=r"over 8 devices: pad it from 12 to 16"):
        uneven.check_divides((12, 4), P(("x", "y")), mesh)  # both axes: 2 x 4
    with pytest.raises(ValueError, match=r"dimension 1 of \(4, 6\) over 4 devices"):
        uneven.check_divides((4, 6), P("x", "y"), mesh)


def test_pad_rows_adds_zero_rows_and_a_mask(data):
    batch = data[0]
    padded, mask = uneven.pad_rows(batch, 8)
    assert padded.shape == (16, 32) and padded.dtype == batch.dtype
    np.testing.assert_array_equal(padded[:10], batch)
    np.testing.assert_array_equal(padded[10:], 0)
    assert mask.tolist() == [True] * 10 + [False] * 6
    same, all_real = uneven.pad_rows(batch[:8], 8)
    assert same.shape == (8, 32) and all_real.all()
    one_d, _ = uneven.pad_rows(np.arange(3.0), 4)
    assert one_d.tolist() == [0.0, 1.0, 2.0, 0.0]
    with pytest.raises(ValueError, match="multiple must be 1 or more, got 0"):
        uneven.pad_rows(batch, 0)


def test_the_padded_batch_stays_split(page_mesh, data, capsys):
    batch, _, weights = data
    compiled, x, w, y, mask = uneven.split_padded(page_mesh, batch, weights)
    assert str(jax.typeof(x)) == "float32[16@x,32]" and w.sharding.spec == P()
    assert str(jax.typeof(y)) == "float32[16@x,64]"
    assert shard_rows(y) == {2}
    assert count_collectives(compiled) == {}
    flops = compiled.cost_analysis()["flops"]
    assert flops == 2 * 2 * 32 * 64
    assert flops / (2 * 10 * 32 * 64) == 1 / 5  # "a fifth of the flops"
    assert "costs each device a fifth of the flops" in prose()
    np.testing.assert_allclose(
        np.asarray(y)[mask], np.tanh(batch @ weights), rtol=1e-5, atol=1e-6
    )
    assert capsys.readouterr().out.splitlines() == [
        "x: float32[16@x,32]   y: float32[16@x,64]",
        "rows of y per device: {2}",
        "collectives: none",
        "flops per device: 8192",
    ]


def test_the_masked_loss_and_gradient_are_those_of_the_ten_rows(
    page_mesh, data, capsys
):
    batch, targets, weights = data
    _, x, w, _, mask = quietly(uneven.split_padded, page_mesh, batch, weights)
    compiled, loss, grad, numpy_loss = uneven.masked_training_step(
        page_mesh, batch, targets, weights, x, w, mask
    )
    np.testing.assert_allclose(loss, numpy_loss, rtol=1e-6)
    assert numpy_loss == np.mean((np.tanh(batch @ weights) - targets) ** 2)
    one_device = jax.grad(lambda w: jnp.mean((jnp.tanh(batch @ w) - targets) ** 2))
    np.testing.assert_allclose(grad, one_device(weights), rtol=1e-5, atol=1e-7)
    assert str(jax.typeof(grad)) == "float32[32,64]"  # replicated, like the weights
    # Two all-reduces: the count of real rows, and the loss with the gradient.
    assert count_collectives(compiled) == {"all-reduce": 2}
    shapes = re.findall(r"= (\([^)]*\)|\S+) all-reduce\(", compiled.as_text())
    assert sorted(shapes) == ["(f32[], f32[64,32]{1,0})", "s32[]"]
    assert "one adds up the count of real rows" in prose()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "all-reduce          2"
    assert lines[1] == f"loss {loss:.3f}, NumPy on the 10 rows {numpy_loss:.3f}"
    np.testing.assert_allclose(float(loss), numpy_loss, rtol=1e-6)
    assert lines[2] == "gradient within 1e-06 of one device: True"


def test_where_drops_a_nan_in_the_padding_where_a_product_would_not(data):
    batch, targets, weights = data
    padded, mask = uneven.pad_rows(batch, 8)
    padded_targets, _ = uneven.pad_rows(targets, 8)
    padded_targets[10:] = np.nan
    loss = uneven.masked_mean_loss(weights, padded, padded_targets, mask)
    np.testing.assert_allclose(
        loss, np.mean((np.tanh(batch @ weights) - targets) ** 2), rtol=1e-6
    )
    # What the annotation warns of: a mask of zeros and ones lets the nan through.
    per_row = jnp.mean((uneven.forward(padded, weights) - padded_targets) ** 2, axis=-1)
    assert np.isnan(jnp.sum(per_row * mask.astype(np.float32)))
    assert "`nan * 0` is `nan`" in prose()


def test_the_masked_gradient_has_no_nan_whatever_the_padding_holds(data):
    """The second `where` on the inputs: with nan or inf in the padded rows, the
    gradient is still that of the ten real rows."""
    batch, targets, weights = data
    padded, mask = uneven.pad_rows(batch, 8)
    padded_targets, _ = uneven.pad_rows(targets, 8)
    one_device = jax.grad(lambda w: jnp.mean((jnp.tanh(batch @ w) - targets) ** 2))
    for bad in (np.nan, np.inf):
        x, t = padded.copy(), padded_targets.copy()
        x[10:], t[10:] = bad, bad
        grad = jax.grad(uneven.masked_mean_loss)(weights, x, t, mask)
        assert not np.isnan(grad).any()
        np.testing.assert_allclose(grad, one_device(weights), rtol=1e-5, atol=1e-7)

    # One where around the losses alone keeps the value but not the gradient.
    def one_where(w, x, targets, mask):
        per_row = jnp.mean((uneven.forward(x, w) - targets) ** 2, axis=-1)
        return jnp.sum(jnp.where(mask, per_row, 0.0)) / jnp.sum(mask)

    padded_targets[10:] = np.nan
    assert np.isnan(jax.grad(one_where)(weights, padded, padded_targets, mask)).any()
    assert "keeps their value out of the sum, but not their gradient" in prose()


def test_one_where_leaves_a_nan_gradient_for_a_log_of_zero_and_two_do_not():
    """The page's example: a log of zero in a dropped branch."""
    keep, p = jnp.array([True, False]), jnp.array([0.5, 0.0])

    def one_where(p):
        return jnp.where(keep, -jnp.log(p), 0.0).sum()

    def two_wheres(p):
        return jnp.where(keep, -jnp.log(jnp.where(keep, p, 1.0)), 0.0).sum()

    assert one_where(p) == two_wheres(p)
    assert np.isnan(jax.grad(one_where)(p)).tolist() == [False, True]
    assert jax.grad(two_wheres)(p).tolist() == [-2.0, 0.0]
    assert "for a log of zero, say, that is `0 * inf`, `nan`" in prose()
