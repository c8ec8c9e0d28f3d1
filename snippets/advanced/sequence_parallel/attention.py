"""Attention on one device: the plain formula, and the same result a block of keys at a time.

Run `python -m snippets.advanced.sequence_parallel.attention` to print what the page shows.
"""

import jax
import jax.numpy as jnp

# The page imports these with the imports of ring.py.


# --8<-- [start:attention]
def attention(q, k, v, causal=False):
    """softmax(q kᵀ / √d) v for one head: q and k are (positions, d), v (positions, d_v)."""
    if q.ndim != 2 or k.ndim != 2 or v.ndim != 2:
        raise ValueError(
            f"q, k and v must be 2-D (positions, features); got {q.shape}, "
            f"{k.shape}, {v.shape}. Give one head at a time."
        )
    if q.shape[1] != k.shape[1] or k.shape[0] != v.shape[0]:
        raise ValueError(
            f"q and k need the same feature size, k and v the same positions; got "
            f"{q.shape}, {k.shape}, {v.shape}."
        )
    scores = q @ k.T / jnp.sqrt(q.shape[1])  # (queries, keys)
    if causal:  # query i sees keys 0 ... i
        rows, cols = jnp.arange(q.shape[0])[:, None], jnp.arange(k.shape[0])
        scores = jnp.where(cols <= rows, scores, -jnp.inf)
    return jax.nn.softmax(scores, axis=1) @ v


# --8<-- [end:attention]


def make_data() -> tuple[jax.Array, jax.Array, jax.Array]:
    # --8<-- [start:data]
    q, k, v = jax.random.normal(jax.random.key(0), (3, 64, 16))  # 64 positions, d = 16
    out = attention(q, k, v)
    print("q, k, v:", q.shape, " scores:", (q @ k.T).shape, " out:", out.shape)
    # --8<-- [end:data]
    return q, k, v


def scores_grow() -> None:
    # --8<-- [start:scores-grow]
    for positions in (1024, 8192, 32768):
        head = jax.ShapeDtypeStruct((positions, 128), jnp.float32)
        scores = jax.eval_shape(lambda q, k: q @ k.T, head, head)  # (1)!
        mib = scores.size * scores.dtype.itemsize / 2**20
        print(f"{positions:>6} positions: scores {scores.shape}, {mib:>5,.0f} MiB")
    # --8<-- [end:scores-grow]


# --8<-- [start:online-softmax]
def start(q, v):
    """Nothing seen yet: running max -inf, running denominator and numerator 0."""
    rows = q.shape[0]
    return (
        jnp.full((rows,), -jnp.inf, q.dtype),  # max of each query's scores so far
        jnp.zeros((rows,), q.dtype),  # sum of exp(score - max) so far
        jnp.zeros((rows, v.shape[1]), q.dtype),  # sum of exp(score - max) * value
    )


def accumulate(carry, q, k, v, visible=None):
    """Fold one block of keys and values into the running softmax of the queries q."""
    running_max, denominator, numerator = carry
    scores = q @ k.T / jnp.sqrt(q.shape[1])
    if visible is not None:
        scores = jnp.where(visible, scores, -jnp.inf)  # (1)!
    new_max = jnp.maximum(running_max, scores.max(axis=1))
    rescale = jnp.exp(running_max - new_max)  # (2)!
    weights = jnp.exp(scores - new_max[:, None])  # each at most 1: no overflow
    denominator = denominator * rescale + weights.sum(axis=1)
    numerator = numerator * rescale[:, None] + weights @ v
    return new_max, denominator, numerator


def finish(carry):
    _, denominator, numerator = carry
    return numerator / denominator[:, None]


# --8<-- [end:online-softmax]


# --8<-- [start:streaming]
def streaming_attention(q, k, v, block, causal=False):
    """attention(q, k, v, causal), reading k and v `block` positions at a time."""
    if block < 1 or k.shape[0] % block:
        raise ValueError(
            f"block={block} must divide the {k.shape[0]} positions of k and v: "
            "pick a divisor."
        )
    queries = jnp.arange(q.shape[0])[:, None]
    carry = start(q, v)
    for first in range(0, k.shape[0], block):  # (1)!
        keys = first + jnp.arange(block)
        visible = keys <= queries if causal else None
        rows = slice(first, first + block)
        carry = accumulate(carry, q, k[rows], v[rows], visible)
    return finish(carry)


# --8<-- [end:streaming]


def streaming_matches(q, k, v) -> None:
    # --8<-- [start:streaming-check]
    for causal in (False, True):
        streamed = streaming_attention(q, k, v, 8, causal)
        gap = jnp.abs(streamed - attention(q, k, v, causal)).max()
        print(f"causal={causal!s:<5}  within {1e-5:g} of attention: {gap <= 1e-5}")
    # --8<-- [end:streaming-check]


def main() -> None:
    q, k, v = make_data()
    scores_grow()
    streaming_matches(q, k, v)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
