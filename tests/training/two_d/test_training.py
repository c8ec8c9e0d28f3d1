import jax
import numpy as np
import pytest
from flax import nnx
from jax import P

from snippets.training.two_d import training
from tests.training.two_d.printed import quietly

# The tolerance the page states: parameters after five Adam steps within 1e-5.
ATOL = 1e-5


@pytest.fixture(scope="module")
def trained(runs):
    return quietly(training.train_every_shape, runs[0])


def test_every_shape_matches_the_single_device_reference(trained):
    (reference_losses, reference, results), _ = trained
    assert list(results) == [(8, 1), (4, 2), (2, 4), (1, 8)]
    expected = jax.tree.leaves(nnx.state(reference, nnx.Param))
    for losses, model in results.values():
        np.testing.assert_allclose(losses, reference_losses, rtol=1e-6, atol=1e-6)
        got = jax.tree.leaves(nnx.state(model, nnx.Param))
        for a, b in zip(got, expected, strict=True):
            np.testing.assert_allclose(a, b, atol=ATOL)


def test_trained_parameters_keep_their_layout(trained):
    results = trained[0][2]
    for (_, n_model), (_, model) in results.items():
        kernel = model.up.kernel[...]
        # On the 8 x 1 mesh the compiler drops the "model" axis of size 1 from the spec.
        assert kernel.sharding.spec == (P(None, "model") if n_model > 1 else P())
        assert {s.data.shape for s in kernel.addressable_shards} == {
            (32, 128 // n_model)
        }


def test_the_printed_comparison(trained):
    lines = trained[1].splitlines()
    assert lines[0] == "mesh   final loss  losses within 1e-06  parameters within 1e-05"
    final = lines[-1].split()[-1]
    assert len(final.split(".")[1]) == 3
    for line in lines[1:5]:
        _, loss, loss_within, params_within = line.rsplit(maxsplit=3)
        assert loss == final
        assert loss_within == params_within == "True"
    assert lines[-1].startswith("one device  ")


def test_error_messages(column_row, capsys):
    training.mesh_of_six()
    training.batch_of_sixty()
    training.hidden_of_hundred(column_row)
    assert capsys.readouterr().out.splitlines() == [
        "ValueError: A mesh of shape (3, 2) does not hold the 8 devices: give two sizes "
        "whose product is 8, such as (2, 4).",
        "ValueError: A batch of 60 inputs and 60 targets does not split over the 8 "
        "devices of the 'data' axis: make it a multiple of 8, or use fewer devices on "
        "'data'.",
        "ValueError: down.kernel has shape (100, 8): its dimension 0 (100) does not "
        "split evenly over mesh axis 'model' (8 devices). Make it a multiple of 8, or "
        "split it over a smaller mesh axis.",
    ]


def test_the_4x2_mesh_takes_both(column_row):
    (odd, x, y), _ = quietly(training.both_fit_4x2, column_row)
    assert {s.data.shape for s in odd.up.kernel[...].addressable_shards} == {(32, 50)}
    assert {s.data.shape for s in x.addressable_shards} == {(15, 32)}
    assert {s.data.shape for s in y.addressable_shards} == {(15, 8)}
