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
