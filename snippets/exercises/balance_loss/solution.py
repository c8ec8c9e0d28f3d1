"""Reference solution of the exercise `balance_loss` (expert parallelism).

Run `python -m snippets.exercises.balance_loss.solution` to score an even and a skewed router.
"""

# --8<-- [start:imports]
import jax
import jax.numpy as jnp

# --8<-- [end:imports]


# --8<-- [start:solution]
def balance_loss(logits: jax.Array, choices: jax.Array) -> jax.Array:
    """n_experts * sum_e f_e * p_e, differentiable through p only."""
    tokens, n_experts = logits.shape
    if choices.ndim != 2 or choices.shape[0] != tokens:
        raise ValueError(
            f"choices must have shape (tokens, k) = ({tokens}, k), one row per row "
            f"of logits; got {choices.shape}."
        )
    counts = jax.nn.one_hot(choices, n_experts).sum(axis=(0, 1))  # (1)!
    f = counts / choices.size  # (2)!
    p = jax.nn.softmax(logits, axis=-1).mean(axis=0)  # (3)!
    return n_experts * jnp.sum(f * p)


# --8<-- [end:solution]


def main() -> None:
    logits = jax.random.normal(jax.random.key(0), (64, 8))
    for name, scores in [
        ("random router", logits),
        ("expert 0 wins", logits.at[:, 0].add(5)),
    ]:
        _, top2 = jax.lax.top_k(scores, 2)
        print(f"{name:<14} top-2 loss {float(balance_loss(scores, top2)):.3f}")


if __name__ == "__main__":
    main()
