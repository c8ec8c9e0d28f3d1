import re

import jax
import numpy as np
import pytest
from flax import nnx
from jax import P

from snippets.hlo import count_collectives
from snippets.training.tensor_parallel import training
from tests.training.tensor_parallel.printed import quietly

# The tolerance the page states: parameters after five Adam steps within 1e-5.
ATOL = 1e-5


@pytest.fixture(scope="module")
def run(placed, model_mesh):
    model = placed[1]
    (optimizer, data, compiled), _ = quietly(training.compile_step, model, model_mesh)
    trained, out = quietly(training.train_and_compare, model, optimizer, data, compiled)
    return optimizer, data, compiled, trained, out


def test_the_train_step_has_one_all_reduce_the_forward_one(run):
    compiled = run[2]
    assert count_collectives(compiled) == {"all-reduce": 1}
    assert re.search(r"= f32\[64,8\]\S* all-reduce\(", compiled.as_text())


def test_batches_are_replicated(run):
    data = run[1]
    assert len(data) == 5
    for x, y in data:
        assert x.shape == (64, 32) and y.shape == (64, 8)
        assert x.sharding.spec == P() and y.sharding.spec == P()


def test_five_steps_match_the_single_device_reference(run):
    losses, reference_losses, model, reference = run[3]
    np.testing.assert_allclose(losses, reference_losses, rtol=1e-6, atol=1e-6)
    for a, b in zip(
        jax.tree.leaves(nnx.state(model, nnx.Param)),
        jax.tree.leaves(nnx.state(reference, nnx.Param)),
        strict=True,
    ):
        np.testing.assert_allclose(a, b, atol=ATOL)
    assert losses[-1] < losses[0]


def test_parameters_and_adam_state_keep_their_split(run):
    model = run[3][2]
    assert model.up.kernel[...].sharding.spec == P(None, "model")
    assert model.up.bias[...].sharding.spec == P("model")
    assert model.down.kernel[...].sharding.spec in (P("model", None), P("model"))
    adam = run[0].opt_state[0]
    for moments in (adam.mu, adam.nu):
        assert moments["up"]["kernel"][...].sharding.spec == P(None, "model")
        assert {
            s.data.shape for s in moments["up"]["kernel"][...].addressable_shards
        } == {(32, 16)}


def test_printed_comparison(run):
    lines = run[4].splitlines()
    start = lines.index("step  one device  tensor parallel")
    rows = [line.split() for line in lines[start + 1 : start + 6]]
    assert [r[0] for r in rows] == ["0", "1", "2", "3", "4"]
    assert all(r[1] == r[2] for r in rows)  # equal to the 3 printed decimals
    assert all(len(r[1].split(".")[1]) == 3 for r in rows)
    assert lines[start + 6] == "parameters within 1e-05 of one device: True"
    assert lines[start + 7] == "up.kernel still split: P(None, 'model')"
