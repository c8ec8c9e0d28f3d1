"""balance_loss: the grader's reference is the expert-parallelism page's, its gradient is
the one through p alone, and the loss scores an even router 1."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from snippets.advanced.expert_parallel.balance import reference_balance
from snippets.exercises import solution
from snippets.exercises.balance_loss import grader

balance_loss = solution("balance_loss")


def test_at_top_1_the_graders_formula_is_the_pages_reference():
    logits, choices = grader.inputs(64, 8, 1, "top", 0)
    page = reference_balance(logits, np.eye(8, dtype=np.float32))
    assert grader.expected_loss(logits, choices) == pytest.approx(page, rel=1e-12)
    assert float(balance_loss(logits, choices)) == pytest.approx(page, rel=1e-5)


def test_the_expected_gradient_is_jax_grad_with_f_held_fixed():
    logits, choices = grader.inputs(40, 4, 2, "skewed", 3)
    got = jax.grad(lambda scores: balance_loss(scores, choices))(logits)
    np.testing.assert_allclose(
        got, grader.expected_grad(logits, choices), rtol=1e-4, atol=1e-7
    )
    assert np.abs(grader.expected_grad(logits, choices)).max() > 1e-3


def test_a_straight_through_f_is_refused_for_its_gradient_only():
    def straight_through(logits, choices):
        probs = jax.nn.softmax(logits, axis=-1)
        hard = jax.nn.one_hot(choices, logits.shape[1]).sum(axis=(0, 1)) / choices.size
        f = hard + probs.mean(0) - jax.lax.stop_gradient(probs.mean(0))
        return logits.shape[1] * jnp.sum(f * probs.mean(0))

    args = grader.inputs(64, 8, 1, "top", 0)
    assert grader.loss_problems(straight_through(*args), *args, page=True) == []
    (problem,) = grader.gradient_problems(straight_through, args)
    assert "its gradient with respect to the logits is not" in problem
    assert grader.gradient_problems(balance_loss, args) == []


@pytest.mark.parametrize("k", [1, 2, 4])
def test_an_even_router_scores_one_whatever_k(k):
    tokens, experts = 32, 8
    logits = jnp.zeros((tokens, experts))
    choices = (jnp.arange(tokens * k).reshape(tokens, k) % experts).astype(jnp.int32)
    assert float(balance_loss(logits, choices)) == pytest.approx(1.0, rel=1e-6)


def test_choices_of_another_length_say_what_shape():
    with pytest.raises(ValueError, match=r"shape \(tokens, k\) = \(64, k\)"):
        balance_loss(jnp.zeros((64, 8)), jnp.zeros((32, 1), jnp.int32))
