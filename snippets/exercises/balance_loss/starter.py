"""Exercise balance_loss: the load-balancing loss of a mixture-of-experts router.

Check: python -m snippets.exercises.check balance_loss my_solution.py
"""

import jax


def balance_loss(logits: jax.Array, choices: jax.Array) -> jax.Array:
    """Return the Switch Transformer's auxiliary loss, a scalar.

    `logits` (tokens, n_experts) are the router's scores; `choices` (tokens, k)
    are the experts each token was sent to, as integers (its top-k, perhaps
    picked from noisy scores: use them as given). With f_e the fraction of the
    tokens * k choices that are expert e, and p_e the softmax probability of e
    averaged over the tokens, return n_experts * sum_e f_e * p_e. Its gradient
    with respect to the logits must come through p alone: f counts choices.
    Raise ValueError unless choices has shape (tokens, k).
    """
    raise NotImplementedError("balance_loss: write it")
