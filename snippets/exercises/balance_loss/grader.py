"""The grader of balance_loss: its hidden cases and what it checks.

The exercise practises Expert parallelism (advanced/expert-parallel.md);
its statement is docs/exercises/balance_loss.md.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from snippets.exercises.grading import Case, Exercise, Problems, array_problems, number

RTOL, ATOL = 1e-5, 1e-7


def balance_loss_cases() -> list[Case]:
    cases = []
    # (tokens, experts, k, how the choices are made, seed)
    for tokens, experts, k, how, seed in [
        (64, 8, 1, "top", 0),
        (64, 8, 2, "top", 1),
        (48, 6, 1, "noisy", 2),
        (40, 4, 2, "skewed", 3),
    ]:
        words = {
            "top": f"the top-{k} of the logits",
            "noisy": "the top-1 of the logits plus noise (not always the logits' own)",
            "skewed": f"the top-{k} of logits that favour expert 0",
        }[how]
        cases.append(
            Case(
                about=f"{tokens} tokens, {experts} experts, choices {words}",
                args=lambda t=tokens, e=experts, k=k, h=how, s=seed: inputs(
                    t, e, k, h, s
                ),
                check=lambda got, a, p=how == "top" and k == 1: loss_problems(
                    got, *a, page=p
                ),
            )
        )
    cases.append(
        Case(
            about="choices for 32 tokens, logits for 64: should raise",
            args=lambda: (inputs(64, 8, 1, "top", 4)[0], inputs(32, 8, 1, "top", 4)[1]),
            raises=ValueError,
        )
    )
    return cases


def inputs(tokens: int, experts: int, k: int, how: str, seed: int):
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal((tokens, experts), dtype=np.float32)
    scores = logits.copy()
    if how == "noisy":
        scores += rng.standard_normal(scores.shape, dtype=np.float32)
    if how == "skewed":
        logits[:, 0] += 2.0
        scores = logits
    choices = np.argsort(-scores, axis=1, kind="stable")[:, :k].astype(np.int32)
    return jnp.asarray(logits), jnp.asarray(choices)


def parts(logits, choices) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """f (fractions of the choices), p (mean probabilities) and every token's
    probabilities, in float64."""
    scores = np.asarray(logits, np.float64)
    probs = np.exp(scores - scores.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    choices = np.asarray(choices)
    f = np.bincount(choices.ravel(), minlength=scores.shape[1]) / choices.size
    return f, probs.mean(axis=0), probs


def expected_loss(logits, choices) -> float:
    f, p, _ = parts(logits, choices)
    return len(f) * float(np.sum(f * p))


def expected_grad(logits, choices) -> np.ndarray:
    """d loss / d logits with f held fixed: (experts / tokens) p_t (f - p_t . f)."""
    f, _, probs = parts(logits, choices)
    tokens, experts = probs.shape
    return experts / tokens * probs * (f[None, :] - (probs @ f)[:, None])


def page_loss(logits) -> float:
    """The page's own reference: its router is the identity, so its scores are logits."""
    from snippets.advanced.expert_parallel.balance import reference_balance

    experts = logits.shape[1]
    return float(reference_balance(logits, np.eye(experts, dtype=np.float32)))


def mistakes(logits, choices) -> list[tuple[float, str]]:
    """What plausible wrong formulas give, and what to say when an answer matches one."""
    f, p, probs = parts(logits, choices)
    experts, tokens, k = len(f), probs.shape[0], choices.shape[1]
    want = experts * np.sum(f * p)
    own = np.argsort(-np.asarray(logits), axis=1, kind="stable")[:, :k]
    found = [
        (
            want / experts,
            f"that is the loss divided by n_experts ({experts}): multiply the sum by "
            "n_experts, so that an even router scores 1 whatever the number of experts.",
        ),
        (
            experts * np.sum(f * f),
            "that is n_experts * sum f_e * f_e: f used twice. The second factor is p_e, "
            "the router's probability for e averaged over the tokens; it is what "
            "carries the gradient, since f only counts choices.",
        ),
        (
            experts * np.sum(p * p),
            "that is n_experts * sum p_e * p_e: p used twice. The first factor is f_e, "
            "the fraction of the choices that went to e, counted from `choices`.",
        ),
        (
            experts / tokens,
            "that is n_experts / tokens, what a softmax over the tokens (axis 0) gives: "
            "each token's probabilities are a softmax over the experts, axis -1.",
        ),
    ]
    if k > 1:
        found.append(
            (
                k * want,
                f"that is {k} times the loss: f_e divides the count of e by all "
                f"tokens * k choices ({tokens} * {k}), not by the {tokens} tokens.",
            )
        )
    if (own != np.asarray(choices)).any():
        found.append(
            (
                expected_loss(logits, own),
                "that is the loss for the logits' own top-k, not for the choices "
                "given: count f from `choices`, which a router may pick from noisy "
                "scores.",
            )
        )
    return found


def loss_problems(got, logits, choices, page: bool = False) -> Problems:
    want = page_loss(logits) if page else expected_loss(logits, choices)
    if problems := array_problems(got, np.float32(want), rtol=RTOL, atol=ATOL):
        value = np.asarray(got, np.float64) if np.ndim(got) == 0 else None
        if value is not None:
            said = f"wrong value: expected {number(want)}, got {number(value)}; "
            for wrong, why in mistakes(logits, choices):
                if np.isclose(value, wrong, rtol=RTOL, atol=ATOL):
                    return [said + why]
        return problems
    return []


def gradient_problems(fn, args: tuple, program=None) -> Problems:
    """The gradient with respect to the logits, against the one through p alone."""
    logits, choices = args
    try:
        value = float(np.asarray(fn(logits, choices)))
    except Exception:  # the cases above say what went wrong
        value = None
    if value is None or not np.isclose(
        value, expected_loss(logits, choices), RTOL, ATOL
    ):
        return [
            "not compared yet: the gradient is checked once the loss's value is right "
            "(see the case above)."
        ]
    try:
        grad = jax.grad(lambda scores: jnp.asarray(fn(scores, choices)).sum())(logits)
    except jax.errors.TracerArrayConversionError:
        return [
            "jax.grad cannot differentiate it: it turns the logits into a NumPy array. "
            "Compute p with jax.numpy, so that the gradient reaches the logits."
        ]
    got, want = np.asarray(grad, np.float64), expected_grad(logits, choices)
    if np.allclose(got, want, rtol=1e-4, atol=1e-6):
        return []
    if not got.any():
        return [
            "the value is right, but no gradient reaches the logits: p_e, the mean "
            "softmax probability, must stay differentiable (no stop_gradient on it)."
        ]
    worst = float(np.max(np.abs(got - want)))
    return [
        "the value is right, but its gradient with respect to the logits is not (off "
        f"by up to {number(worst)}): the gradient must come through p alone. f counts "
        "the choices and carries none; a straight-through f, or f made from the "
        "probabilities, sends gradient through the choice."
    ]


EXERCISE = Exercise(
    name="balance_loss",
    title="A load-balancing loss for the router",
    params=("logits", "choices"),
    practises="advanced/expert-parallel.md",
    solution="snippets/exercises/balance_loss/solution.py:solution",
    cases=balance_loss_cases,
    traced=(0, 1),
    rules=gradient_problems,
    rules_words=("its gradient comes through p alone",),
    on_error={
        "incompatible shapes for broadcasting": (
            "f and p each hold one number per expert, shape (n_experts,): average "
            "the probabilities over the tokens (axis 0), not over the experts."
        ),
    },
)
