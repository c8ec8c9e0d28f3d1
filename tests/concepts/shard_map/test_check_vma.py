import jax
import numpy as np
import pytest
from jax import P

from snippets.concepts.shard_map import check_vma, local_view, partial_sums


@pytest.fixture
def x():
    return local_view.build_data()[1]


@pytest.fixture
def local_sum(line_mesh, x):
    return partial_sums.partial_sums(line_mesh, x)[0]


def test_types_record_which_values_vary_across_devices(line_mesh, x, capsys):
    capsys.readouterr()
    total = check_vma.varying_types(line_mesh, x)
    assert float(total) == 120.0
    assert capsys.readouterr().out.splitlines() == [
        "block:   float32[2]{V:x}",
        "partial: float32[]{V:x}",
        "total:   float32[]",
    ]


def test_claiming_replication_of_a_varying_value_fails(line_mesh, x, local_sum, capsys):
    capsys.readouterr()
    check_vma.claim_replication(line_mesh, x, local_sum)
    out = capsys.readouterr().out
    assert out.startswith(
        "ValueError: shard_map applied to the function 'local_sum' was given "
        "out_specs which require replication which can't be statically inferred "
        "given the mesh:"
    )
    assert (
        "out_specs is P() which implies that the corresponding output value is "
        "replicated across mesh axis 'x', but could not infer replication over any "
        "axes" in out
    )
    assert "passing the check_vma=False argument to `jax.shard_map`" in out


def test_outside_jit_the_message_names_an_internal_wrapper(line_mesh, x, local_sum):
    # What the page's annotation says about calling it without jax.jit.
    unjitted = jax.shard_map(local_sum, mesh=line_mesh, in_specs=P("x"), out_specs=P())
    with pytest.raises(ValueError, match="to the function '_rem_singleton' was given"):
        unjitted(x)


def test_psum_makes_the_claim_true(line_mesh, x, local_sum, capsys):
    capsys.readouterr()
    total = check_vma.fix_with_psum(line_mesh, x, local_sum)
    np.testing.assert_allclose(total, [np.sum(np.arange(16.0))])
    assert total.sharding.spec == P()
    assert capsys.readouterr().out == "float32[1] [120.]\n"


def test_check_vma_off_returns_one_devices_partial_sum(line_mesh, x, local_sum, capsys):
    capsys.readouterr()
    claimed = check_vma.check_vma_off(line_mesh, x, local_sum)
    # One device's partial sum, not the total; JAX does not say whose. The page says what this
    # CPU run returned (device 0's), and this test fails if that changes.
    partials = np.arange(16.0).reshape(8, 2).sum(axis=1)
    assert float(claimed[0]) in partials.tolist() and float(claimed[0]) != 120.0
    np.testing.assert_array_equal(claimed, [0.0 + 1.0])
    assert capsys.readouterr().out == "claimed total: [1.]  np.sum(x): 120.0\n"


def test_a_psum_of_copies_is_the_copy_times_the_axis_size(line_mesh, capsys):
    """No error: each device's copy is one term of the sum; pmean gives the copy back."""
    w = jax.numpy.array([1.0, 10.0])
    capsys.readouterr()
    eight_ws, same_w = check_vma.sum_of_copies(line_mesh, w)
    size = line_mesh.shape["x"]
    np.testing.assert_array_equal(np.asarray(eight_ws), size * np.asarray(w))
    np.testing.assert_array_equal(np.asarray(same_w), np.asarray(w))
    assert capsys.readouterr().out.splitlines() == [
        "w inside: float32[2]",
        "w:        [ 1. 10.]",
        f"psum(w):  [ {size}. {size * 10}.]",
        "pmean(w): [ 1. 10.]",
    ]


def test_the_gradient_of_a_copied_weight_is_already_summed(line_mesh, x, capsys):
    w = jax.numpy.array([1.0, 10.0])
    capsys.readouterr()
    g, again = check_vma.gradient_of_copies(line_mesh, x, w)
    whole = np.asarray(x).reshape(-1, 2).sum(axis=0)  # d/dw of sum(x * w), whole batch
    np.testing.assert_array_equal(np.asarray(g), whole)
    np.testing.assert_array_equal(np.asarray(again), line_mesh.shape["x"] * whole)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "g: float32[2]"
    assert out[1].split() == ["g:", "[56.", "64.]"]
    assert out[2].split() == ["whole", "batch:", "[56.", "64.]"]
    assert out[3].split() == ["psum(g)", "again:", "[448.", "512.]"]
