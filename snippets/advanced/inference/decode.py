"""Greedy decoding with a KV cache, for one attention layer written with explicit weights.

Run `python -m snippets.advanced.inference.decode` to print what the page shows.
"""

# --8<-- [start:imports]
import math

import jax
import jax.numpy as jnp
import numpy as np

# --8<-- [end:imports]


# --8<-- [start:weights]
VOCAB, D_MODEL, HEADS, HEAD_DIM, MAX_LEN = 64, 128, 8, 16, 32


def weight_shapes(heads: int = HEADS, head_dim: int = HEAD_DIM) -> dict[str, tuple]:
    """The layer's weights: an embedding, one attention layer, an unembedding."""
    if heads < 1 or head_dim < 1:
        raise ValueError(f"heads ({heads}) and head_dim ({head_dim}) must be >= 1.")
    return {
        "embed": (VOCAB, D_MODEL),  # token id -> vector
        "pos": (MAX_LEN, D_MODEL),  # position -> vector
        "wq": (D_MODEL, heads, head_dim),  # head h's columns: wq[:, h]
        "wk": (D_MODEL, heads, head_dim),
        "wv": (D_MODEL, heads, head_dim),
        "wo": (heads, head_dim, D_MODEL),  # head h's rows: wo[h]
        "unembed": (D_MODEL, VOCAB),  # vector -> a score per token id
    }


def init_weights(seed: int = 0, heads: int = HEADS, head_dim: int = HEAD_DIM) -> dict:
    rng = np.random.default_rng(seed)  # (1)!
    fan_in = {"embed": 1, "pos": 1, "wo": heads * head_dim}  # the rest: D_MODEL
    return {
        name: jnp.asarray(rng.standard_normal(shape, np.float32))
        / math.sqrt(fan_in.get(name, D_MODEL))
        for name, shape in weight_shapes(heads, head_dim).items()
    }


# --8<-- [end:weights]


# --8<-- [start:cache]
def empty_cache(batch: int, heads: int = HEADS, head_dim: int = HEAD_DIM) -> dict:
    """Room for the keys and values of MAX_LEN positions of every sequence."""
    if batch < 1:
        raise ValueError(f"batch ({batch}) must be >= 1.")
    shape = (batch, heads, MAX_LEN, head_dim)
    return {"k": jnp.zeros(shape), "v": jnp.zeros(shape)}


# --8<-- [end:cache]


# --8<-- [start:attention]
def keys_values(w: dict, x):
    """x: (batch, T, D_MODEL) -> keys and values, each (batch, heads, T, head_dim)."""
    k = jnp.einsum("btd,dhk->bhtk", x, w["wk"])
    v = jnp.einsum("btd,dhk->bhtk", x, w["wv"])
    return k, v


def attend(w: dict, x, keys, values, mask):
    """x (batch, T, D_MODEL) attends where mask (T, S) is True: logits (batch, T, VOCAB)."""
    q = jnp.einsum("btd,dhk->bhtk", x, w["wq"])
    scores = jnp.einsum("bhtk,bhsk->bhts", q, keys) / math.sqrt(q.shape[-1])
    scores = jnp.where(mask, scores, -jnp.inf)  # (1)!
    mixed = jnp.einsum("bhts,bhsk->bhtk", jax.nn.softmax(scores, axis=-1), values)
    x = x + jnp.einsum("bhtk,hkd->btd", mixed, w["wo"])  # (2)!
    return x @ w["unembed"]


# --8<-- [end:attention]


# --8<-- [start:forward]
def forward(w: dict, tokens):
    """The logits at every position of tokens (batch, T), computed from scratch."""
    length = tokens.shape[1]
    x = w["embed"][tokens] + w["pos"][:length]
    k, v = keys_values(w, x)
    causal = jnp.tril(jnp.ones((length, length), bool))  # position t sees 0..t
    return attend(w, x, k, v, causal), (k, v)


def prefill(w: dict, cache: dict, prompt):
    """Run the whole prompt at once; write its keys and values at positions 0.."""
    logits, (k, v) = forward(w, prompt)
    cache = {
        "k": jax.lax.dynamic_update_slice(cache["k"], k, (0, 0, 0, 0)),
        "v": jax.lax.dynamic_update_slice(cache["v"], v, (0, 0, 0, 0)),
    }
    last = logits[:, -1]  # the prediction for the token after the prompt
    return jnp.argmax(last, axis=-1), last, cache


# --8<-- [end:forward]


# --8<-- [start:decode-step]
def decode_step(w: dict, cache: dict, token, pos):
    """One token per sequence, (batch,), at position pos: the next token, its
    logits (batch, VOCAB), and the cache with this token's keys and values in it."""
    x = (w["embed"][token] + w["pos"][pos])[:, None]  # (batch, 1, D_MODEL)
    k, v = keys_values(w, x)  # (batch, heads, 1, head_dim)
    at = (0, 0, pos, 0)  # (1)!
    cache = {
        "k": jax.lax.dynamic_update_slice(cache["k"], k, at),
        "v": jax.lax.dynamic_update_slice(cache["v"], v, at),
    }
    filled = jnp.arange(cache["k"].shape[2]) <= pos  # (2)!
    logits = attend(w, x, cache["k"], cache["v"], filled[None])[:, 0]
    return jnp.argmax(logits, axis=-1), logits, cache


# --8<-- [end:decode-step]


# --8<-- [start:generate]
def generate(prefill, step, w: dict, cache: dict, prompt, new_tokens: int):
    """Greedy decoding: new_tokens tokens after the prompt, one step at a time.
    Returns their ids (batch, new_tokens) and logits (batch, new_tokens, VOCAB)."""
    length, room = prompt.shape[1], cache["k"].shape[2]
    if new_tokens < 1 or length + new_tokens - 1 > room:  # (1)!
        raise ValueError(
            f"A prompt of {length} and {new_tokens} new tokens write "
            f"{length + new_tokens - 1} positions; the cache has {room}. "
            "Ask for at least 1 and fewer tokens, or make the cache longer."
        )
    token, logits, cache = prefill(w, cache, prompt)
    tokens, all_logits = [np.asarray(token)], [np.asarray(logits)]  # (2)!
    for pos in range(length, length + new_tokens - 1):
        token, logits, cache = step(w, cache, token, pos)  # (3)!
        tokens.append(np.asarray(token))
        all_logits.append(np.asarray(logits))
    return np.stack(tokens, axis=1), np.stack(all_logits, axis=1)


# --8<-- [end:generate]


def make_prompt():
    # --8<-- [start:prompt]
    weights = init_weights(seed=0)
    prompt = np.random.default_rng(1).integers(0, VOCAB, (8, 8), np.int32)  # (1)!
    print("prompt:", prompt.shape, prompt.dtype)
    # --8<-- [end:prompt]
    return weights, prompt


def generate_on_one_device(weights: dict, prompt):
    # --8<-- [start:generate-one-device]
    prefill_one = jax.jit(prefill, donate_argnums=1)  # (1)!
    step_one = jax.jit(decode_step, donate_argnums=1)
    cache = empty_cache(batch=prompt.shape[0])
    tokens, logits = generate(prefill_one, step_one, weights, cache, prompt, 8)
    print(tokens)
    # --8<-- [end:generate-one-device]
    return prefill_one, step_one, tokens, logits


def check_against_recompute(weights: dict, prompt, tokens, logits):
    # --8<-- [start:recompute]
    sequence = np.concatenate([prompt, tokens[:, :-1]], axis=1)  # (1)!
    again = np.asarray(jax.jit(forward)(weights, sequence)[0])
    again = again[:, prompt.shape[1] - 1 :]  # the positions that predicted new tokens
    print("same tokens:", (again.argmax(axis=-1) == tokens).all())
    print(f"logits within {1e-4:g}: {np.abs(again - logits).max() <= 1e-4}")
    # --8<-- [end:recompute]
    return again


def donation(prefill_one, weights: dict, prompt):
    # --8<-- [start:donation]
    row = "{:<8}{:>15}{:>20}{:>20}".format

    def one_step(donate: bool):
        step = jax.jit(decode_step, donate_argnums=1 if donate else ())
        token, _, cache = prefill_one(weights, empty_cache(8), prompt)
        compiled = step.lower(weights, cache, token, 8).compile()
        aliased = compiled.memory_analysis().alias_size_in_bytes  # (1)!
        where = {n: a.unsafe_buffer_pointer() for n, a in cache.items()}  # (2)!
        _, _, new = compiled(weights, cache, token, 8)
        deleted = all(a.is_deleted() for a in cache.values())
        same = all(new[n].unsafe_buffer_pointer() == where[n] for n in new)
        print(row(str(donate), f"{aliased:,}", str(deleted), str(same)))
        return compiled, cache, new

    print(f"cache: {sum(a.nbytes for a in empty_cache(8).values()):,} bytes")
    print(row("donate", "aliased bytes", "old cache deleted", "new in old buffer"))
    kept = one_step(donate=False)
    compiled, old_cache, new_cache = one_step(donate=True)
    # --8<-- [end:donation]
    return kept, (compiled, old_cache, new_cache)


def use_after_donation(old_cache: dict):
    # --8<-- [start:use-after-donation]
    try:
        old_cache["k"] + 1
    except RuntimeError as err:
        print(f"RuntimeError: {err}")
    # --8<-- [end:use-after-donation]


def main() -> None:
    weights, prompt = make_prompt()
    prefill_one, _, tokens, logits = generate_on_one_device(weights, prompt)
    check_against_recompute(weights, prompt, tokens, logits)
    _, (_, old_cache, _) = donation(prefill_one, weights, prompt)
    use_after_donation(old_cache)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
