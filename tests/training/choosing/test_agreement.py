import contextlib
import io

import numpy as np
import pytest
from flax import nnx
from jax import P

from snippets.training.choosing import agreement
from snippets.training.choosing import strategies as st


@pytest.fixture(scope="module")
def printed(runs):
    """The agreement block, run once: its result and what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = agreement.agreement(runs)
    return result, out.getvalue()


@pytest.fixture(scope="module")
def reference(printed):
    (_, ref_losses, ref_model), _ = printed
    return ref_losses, ref_model


def test_the_reference_is_train_reference(reference):
    ref_losses, ref_model = reference
    assert len(ref_losses) == 3
    assert ref_model.up.kernel.shape == (32, 128)
    np.testing.assert_allclose(ref_losses[0], 1.0148702, rtol=1e-6)


@pytest.mark.parametrize("name", list(st.STRATEGIES))
def test_every_strategy_trains_like_one_device(runs, reference, name):
    ref_losses, ref_model = reference
    run = runs[name]
    np.testing.assert_allclose(run.losses, ref_losses, rtol=0, atol=1e-5)
    got, want = nnx.state(run.model, nnx.Param), nnx.state(ref_model, nnx.Param)
    for layer in ("up", "down"):
        for kind in ("kernel", "bias"):
            np.testing.assert_allclose(
                got[layer][kind][...], want[layer][kind][...], rtol=0, atol=1e-5
            )


@pytest.mark.parametrize("name", list(st.STRATEGIES))
def test_training_keeps_each_weight_where_the_rules_put_it(runs, name):
    rules = st.STRATEGIES[name][2]
    model = runs[name].model
    for layer in ("up", "down"):
        for kind in ("kernel", "bias"):
            array = getattr(getattr(model, layer), kind)[...]
            want = tuple(rules.get(f"{layer}.{kind}", P()))
            want += (None,) * (array.ndim - len(want))
            got = tuple(array.sharding.spec)
            assert got + (None,) * (array.ndim - len(got)) == want


def test_the_block_prints_the_gaps(printed):
    (gaps, _, _), out = printed
    assert list(gaps) == list(st.STRATEGIES)
    assert all(loss < 1e-5 and weight < 1e-5 for loss, weight in gaps.values())
    lines = out.splitlines()
    assert lines[:2] == [
        "within 1e-05 of train_reference after 3 steps",
        "strategy         losses weights",
    ]
    assert [line.split()[0] for line in lines[2:]] == [
        "data",
        "FSDP",
        "tensor",
        "2-D",
        "2-D",
    ]
    assert all(line.split()[-2:] == ["True", "True"] for line in lines[2:])
