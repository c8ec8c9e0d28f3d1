"""A cache split along its sequence: each device attends over its slots, then the partial
results are combined across devices (split-K, or flash-decoding, attention).

Run `python -m snippets.advanced.inference.sequence` to print what the page shows.
"""

# --8<-- [start:imports]
import jax
import jax.numpy as jnp
import numpy as np
from jax import P
from jax.sharding import Mesh, NamedSharding

# --8<-- [end:imports]
# isort: split
# On the page, these are defined by earlier blocks.
from snippets.advanced.inference.decode import MAX_LEN, generate
from snippets.advanced.inference.grouped import (
    gqa_cache,
    gqa_decode_step,
    gqa_prefill,
    gqa_shapes,
    grouped_scores,
    init_gqa,
)
from snippets.hlo import read_collectives


# --8<-- [start:partial]
def partial_attention(q, keys, values, filled):
    """Attention of one new token over some of the cache's slots, as three partial
    results: the largest score m, the sum of exp(score - m), and the values weighted
    by exp(score - m), o. q (batch, HEADS, 1, head_dim); keys and values (batch,
    kv_heads, S, head_dim); filled (S,): which of these slots hold a token."""
    scores = jnp.where(filled, grouped_scores(q, keys), -jnp.inf)
    m = scores.max(axis=-1, keepdims=True)  # -inf where no slot here is filled
    p = jnp.exp(scores - jnp.where(jnp.isneginf(m), 0.0, m))  # (1)!
    o = jnp.einsum("bkgts,bksd->bkgtd", p, values)
    return m, p.sum(axis=-1, keepdims=True), o


def combine(m, total, o, axis: str):
    """The partial results of every device on `axis`, made one softmax."""
    top = jax.lax.pmax(m, axis)  # the largest score anywhere
    scale = jnp.exp(m - top)  # (2)!
    return jax.lax.psum(o * scale, axis) / jax.lax.psum(total * scale, axis)


# --8<-- [end:partial]


# --8<-- [start:sequence-step]
def sequence_decode_step(mesh: Mesh, axis: str = "x"):
    """gqa_decode_step with the cache split along its sequence over `axis`: each device
    writes the new token's keys and values if its slots hold `pos`, attends over its
    slots, and the partial results are combined."""
    ways = mesh.shape[axis]

    def local(q, k_new, v_new, keys, values, pos):
        size = keys.shape[2]  # this device's slots: MAX_LEN / ways of them
        start = jax.lax.axis_index(axis) * size  # the first one's position
        mine = (pos >= start) & (pos < start + size)
        at = (0, 0, jnp.clip(pos - start, 0, size - 1), 0)
        keys = jnp.where(mine, jax.lax.dynamic_update_slice(keys, k_new, at), keys)
        values = jnp.where(
            mine, jax.lax.dynamic_update_slice(values, v_new, at), values
        )
        filled = start + jnp.arange(size) <= pos
        mixed = combine(*partial_attention(q, keys, values, filled), axis)
        return mixed, keys, values

    split = P(None, None, axis)  # (batch, kv_heads, MAX_LEN, head_dim)
    attend = jax.shard_map(
        local,
        mesh=mesh,
        in_specs=(P(), P(), P(), split, split, P()),
        out_specs=(P(), split, split),
    )

    def step(w: dict, cache: dict, token, pos):
        if cache["k"].shape[2] % ways:
            raise ValueError(
                f"A cache of {cache['k'].shape[2]} slots does not split over the "
                f"{ways} devices of axis {axis!r}: make its length a multiple of {ways}."
            )
        x = (w["embed"][token] + w["pos"][pos])[:, None]  # (batch, 1, D_MODEL)
        q = jnp.einsum("btd,dhk->bhtk", x, w["wq"])
        k = jnp.einsum("btd,dhk->bhtk", x, w["wk"])
        v = jnp.einsum("btd,dhk->bhtk", x, w["wv"])
        mixed, keys, values = attend(q, k, v, cache["k"], cache["v"], pos)
        mixed = mixed.reshape(q.shape)  # (batch, HEADS, 1, head_dim)
        out = x + jnp.einsum("bhtk,hkd->btd", mixed, w["wo"])
        logits = (out @ w["unembed"])[:, 0]
        return jnp.argmax(logits, axis=-1), logits, {"k": keys, "v": values}

    return step


# --8<-- [end:sequence-step]


# --8<-- [start:sequence-jit]
def by_sequence(mesh: Mesh, batch: int, kv_heads: int, length: int, axis: str = "x"):
    """prefill and the sequence-split step, jitted, and the step's arguments as shapes."""
    whole = NamedSharding(mesh, P())
    split = NamedSharding(mesh, P(None, None, axis))
    kv = (batch, kv_heads, length, gqa_shapes(kv_heads)["wk"][2])
    args = (
        {
            n: jax.ShapeDtypeStruct(s, jnp.float32, sharding=whole)
            for n, s in gqa_shapes(kv_heads).items()
        },
        {n: jax.ShapeDtypeStruct(kv, jnp.float32, sharding=split) for n in "kv"},
        jax.ShapeDtypeStruct((batch,), jnp.int32, sharding=whole),
        jax.ShapeDtypeStruct((), jnp.int32, sharding=whole),
    )
    on = jax.tree.map(lambda a: a.sharding, args)
    out = (whole, whole, on[1])
    first = jax.jit(
        gqa_prefill, in_shardings=on[:3], out_shardings=out, donate_argnums=1
    )
    step = jax.jit(
        sequence_decode_step(mesh, axis),
        in_shardings=on,
        out_shardings=out,
        donate_argnums=1,
    )
    return first, step, args


# --8<-- [end:sequence-jit]


def generate_by_sequence(mesh: Mesh, prompt):
    # --8<-- [start:sequence-run]
    weights = init_gqa(kv_heads=1)  # multi-query: one key-value head
    first, step, args = by_sequence(mesh, batch=8, kv_heads=1, length=MAX_LEN)
    on = jax.tree.map(lambda a: a.sharding, args)
    cache = jax.device_put(gqa_cache(8, kv_heads=1), on[1])
    print(
        "cache",
        cache["k"].shape,
        "device 0 holds",
        cache["k"].addressable_shards[0].data.shape,
    )
    placed = jax.device_put(weights, on[0]), cache, jax.device_put(prompt, on[2])
    tokens, logits = generate(first, step, *placed, new_tokens=8)
    one = jax.jit(gqa_prefill), jax.jit(gqa_decode_step)
    want, want_logits = generate(*one, weights, gqa_cache(8, 1), prompt, 8)
    print(
        f"same tokens as one device: {(tokens == want).all()}, "
        f"logits within {1e-5:g}: {np.abs(logits - want_logits).max() <= 1e-5}"
    )
    compiled = step.lower(*args).compile()  # (1)!
    for c in read_collectives(compiled):
        print(c.kind, c.result)
    # --8<-- [end:sequence-run]
    return tokens, logits, want, want_logits, compiled


def main() -> None:
    from snippets.advanced.inference.decode import make_prompt
    from snippets.advanced.inference.layouts import make_mesh

    _, prompt = make_prompt()
    generate_by_sequence(make_mesh(), prompt)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
