"""Number formats, a gradient that float16 loses and bfloat16 keeps, loss scaling, float32
master weights, and what Optax 0.2.8 offers around them."""

import contextlib
import io

import jax
import jax.numpy as jnp
import optax
import pytest

from snippets.advanced.mixed_precision import scaling


def printed(function):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = function()
    return result, out.getvalue()


def test_bfloat16_has_float32s_exponent_and_float16_has_five_bits():
    _, text = printed(scaling.formats)
    f32, bf16, f16 = (jnp.finfo(d) for d in (jnp.float32, jnp.bfloat16, jnp.float16))
    assert f32.nexp == bf16.nexp == 8 and f16.nexp == 5
    assert (f32.nmant, bf16.nmant, f16.nmant) == (23, 7, 10)
    assert float(bf16.smallest_normal) == float(f32.smallest_normal) == 2.0**-126
    assert float(f16.smallest_normal) == 2.0**-14
    for info in (f32, bf16, f16):  # the printed 2**minexp is the smallest normal
        assert float(info.smallest_normal) == 2.0**info.minexp
    assert "bfloat16                8              7          2**-126" in text
    # "float16's largest number is 65,504, so a scale of 2**16 ... becomes inf"
    assert float(f16.max) == 65504
    assert bool(jnp.isinf(jnp.array(2.0**15, jnp.float16) * 2))


def test_the_small_gradient_underflows_in_float16_only():
    (exact, runs), text = printed(scaling.small_gradients)
    assert (
        float(exact.min()) > 6e-9 and float(exact.max()) < 1.3e-8
    )  # "6e-9 and 1.3e-8"
    # "below the smallest number float16 can hold" (its smallest subnormal)
    assert float(exact.max()) < float(jnp.finfo(jnp.float16).smallest_subnormal) / 2
    for name, (grad, _) in runs.items():
        assert grad.dtype == jnp.float32, name
    assert bool(jnp.all(runs["float16"][0] == 0))
    for name in ("float32", "bfloat16", "float16, loss x 2**15"):
        grad, bound = runs[name]
        assert bool(jnp.all(grad != 0)), name
        assert bool(jnp.all(jnp.abs(grad - exact) <= 2.0**bound * exact)), name
    # the bounds are four times each format's rounding error (unit roundoff)
    for name, dtype in (
        ("float32", jnp.float32),
        ("bfloat16", jnp.bfloat16),
        ("float16", jnp.float16),
    ):
        assert 2.0 ** runs[name][1] == 4 * float(jnp.finfo(dtype).eps) / 2
    # a bound that cannot fail would be a defect: float16 without scaling fails it
    assert "float16                  16384  False (2**-9)" in text
    assert "float16, loss x 2**15        0  True (2**-9)" in text


def test_the_bfloat16_weight_does_not_move_and_the_float32_one_does():
    _, text = printed(scaling.master_weights)
    assert "weights in float32   1.0 -> 0.999, moved: True" in text
    assert "weights in bfloat16  1.0 -> 1, moved: False" in text
    one = jnp.bfloat16(1.0)
    # "whose neighbours are 2**-8 below and 2**-7 above"
    assert float(jnp.nextafter(one, jnp.bfloat16(2)) - one) == 2.0**-7
    assert float(one - jnp.nextafter(one, jnp.bfloat16(0))) == 2.0**-8
    # "One AdamW step moves a weight by about the learning rate"
    tx = optax.adamw(1e-3)
    params = {"w": jnp.ones(4)}
    updates, _ = tx.update({"w": jnp.ones(4)}, tx.init(params), params)
    assert float(jnp.max(jnp.abs(updates["w"] + 1e-3))) < 1e-6


def test_optax_offers_mu_dtype_and_apply_if_finite():
    (adam, _), text = printed(scaling.optax_tools)
    assert adam.mu["w"].dtype == jnp.bfloat16 and adam.nu["w"].dtype == jnp.float32
    assert "mu_dtype=bfloat16: mu bfloat16 and nu float32" in text
    assert "gradient inf: update is zero True, non-finite steps in a row 1" in text
    assert "gradient 1.0: update is zero False, non-finite steps in a row 0" in text
    # "10 bytes per float32 parameter for the weights and both moments instead of 12"
    params = {"w": jnp.ones(1000)}

    def nbytes(mu_dtype):
        state = optax.adamw(1e-3, mu_dtype=mu_dtype).init(params)[0]
        arrays = jax.tree.leaves((params, state.mu, state.nu))
        return sum(a.nbytes for a in arrays) / 1000

    assert (nbytes(jnp.bfloat16), nbytes(None)) == (10, 12)
    assert optax.__version__ == "0.2.8"
    assert not [n for n in dir(optax) if "loss" in n.lower() and "scal" in n.lower()]


def test_apply_if_finite_skips_at_most_max_consecutive_errors():
    """ "It skips at most `max_consecutive_errors` non-finite steps in a row and applies the
    next one.\""""
    params = {"w": jnp.ones(4)}
    tx = optax.apply_if_finite(optax.sgd(1.0), max_consecutive_errors=2)
    state = tx.init(params)
    applied = []
    for _ in range(3):
        updates, state = tx.update({"w": jnp.full(4, jnp.inf)}, state, params)
        applied.append(not bool(jnp.all(updates["w"] == 0)))
    assert applied == [False, False, True]


@pytest.fixture(scope="module")
def prose():
    from tests.advanced.mixed_precision.conftest import PAGE

    return " ".join(PAGE.read_text(encoding="utf-8").split())


def test_the_prose_says_what_the_runs_show(prose):
    for phrase in (
        "bfloat16 has float32's 8 exponent bits and gives up mantissa bits; float16 keeps "
        "more mantissa and only 5 exponent bits",
        "In float16 every entry of the gradient is zero. bfloat16 keeps every one",
        "float16's largest number is 65,504",
        "Optax 0.2.8 has no loss scaler of its own",
    ):
        assert phrase in prose, phrase
