"""Grouped-query and multi-query attention: fewer key-value heads, a smaller cache.

Run `python -m snippets.advanced.inference.grouped` to print what the page shows.
"""

# --8<-- [start:imports]
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import P
from jax.sharding import AxisType, NamedSharding

# --8<-- [end:imports]
# isort: split
# On the page, these are defined by earlier blocks.
from snippets.advanced.inference.decode import (
    D_MODEL,
    HEAD_DIM,
    HEADS,
    MAX_LEN,
    generate,
    weight_shapes,
)


# --8<-- [start:weights]
def gqa_shapes(kv_heads: int) -> dict[str, tuple]:
    """The page's layer with kv_heads key-value heads shared by its HEADS query heads."""
    if kv_heads < 1 or HEADS % kv_heads:
        raise ValueError(
            f"{HEADS} query heads cannot share {kv_heads} key-value heads evenly: "
            f"use a divisor of {HEADS} (1 is multi-query, {HEADS} is multi-head)."
        )
    shapes = weight_shapes()
    shapes["wk"] = shapes["wv"] = (D_MODEL, kv_heads, HEAD_DIM)
    return shapes


def init_gqa(kv_heads: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    fan_in = {"embed": 1, "pos": 1, "wo": HEADS * HEAD_DIM}  # the rest: D_MODEL
    return {
        name: jnp.asarray(rng.standard_normal(shape, np.float32))
        / math.sqrt(fan_in.get(name, D_MODEL))
        for name, shape in gqa_shapes(kv_heads).items()
    }


# --8<-- [end:weights]


# --8<-- [start:attention]
def grouped_scores(q, keys):
    """q (batch, HEADS, T, head_dim), keys (batch, kv_heads, S, head_dim) ->
    scores (batch, kv_heads, group, T, S): query head h reads key-value head h // group."""
    b, heads, t, d = q.shape
    kv_heads = keys.shape[1]
    q = q.reshape(b, kv_heads, heads // kv_heads, t, d)  # (1)!
    return jnp.einsum("bkgtd,bksd->bkgts", q, keys) / math.sqrt(d)


def gqa_attend(w: dict, x, keys, values, mask):
    """As the page's `attend`, with kv_heads key-value heads: logits (batch, T, VOCAB)."""
    q = jnp.einsum("btd,dhk->bhtk", x, w["wq"])
    scores = jnp.where(mask, grouped_scores(q, keys), -jnp.inf)
    mixed = jnp.einsum("bkgts,bksd->bkgtd", jax.nn.softmax(scores, axis=-1), values)
    mixed = mixed.reshape(q.shape)  # back to (batch, HEADS, T, head_dim)
    x = x + jnp.einsum("bhtk,hkd->btd", mixed, w["wo"])
    return x @ w["unembed"]


# --8<-- [end:attention]


# --8<-- [start:steps]
def gqa_prefill(w: dict, cache: dict, prompt):
    """The page's prefill, with grouped heads: the whole prompt at once."""
    length = prompt.shape[1]
    x = w["embed"][prompt] + w["pos"][:length]
    k = jnp.einsum("btd,dhk->bhtk", x, w["wk"])  # (batch, kv_heads, T, head_dim)
    v = jnp.einsum("btd,dhk->bhtk", x, w["wv"])
    causal = jnp.tril(jnp.ones((length, length), bool))
    logits = gqa_attend(w, x, k, v, causal)
    cache = {
        "k": jax.lax.dynamic_update_slice(cache["k"], k, (0, 0, 0, 0)),
        "v": jax.lax.dynamic_update_slice(cache["v"], v, (0, 0, 0, 0)),
    }
    return jnp.argmax(logits[:, -1], axis=-1), logits[:, -1], cache


def gqa_decode_step(w: dict, cache: dict, token, pos):
    """The page's decode_step, with grouped heads."""
    x = (w["embed"][token] + w["pos"][pos])[:, None]
    k = jnp.einsum("btd,dhk->bhtk", x, w["wk"])
    v = jnp.einsum("btd,dhk->bhtk", x, w["wv"])
    cache = {
        "k": jax.lax.dynamic_update_slice(cache["k"], k, (0, 0, pos, 0)),
        "v": jax.lax.dynamic_update_slice(cache["v"], v, (0, 0, pos, 0)),
    }
    filled = jnp.arange(cache["k"].shape[2]) <= pos
    logits = gqa_attend(w, x, cache["k"], cache["v"], filled)[:, 0]
    return jnp.argmax(logits, axis=-1), logits, cache


def gqa_cache(batch: int, kv_heads: int, length: int = MAX_LEN) -> dict:
    if batch < 1 or length < 1:
        raise ValueError(f"batch ({batch}) and length ({length}) must be >= 1.")
    shape = (batch, kv_heads, length, HEAD_DIM)
    return {"k": jnp.zeros(shape), "v": jnp.zeros(shape)}


# --8<-- [end:steps]


# --8<-- [start:head-mesh]
ATTENTION = {"multi-head": HEADS, "grouped-query": 2, "multi-query": 1}


def split_heads(mesh, kv_heads: int) -> P:
    """The cache's spec when its head axis is split over the mesh's axis "x"."""
    ways = mesh.shape["x"]
    if kv_heads % ways:  # (1)!
        raise ValueError(
            f"The cache has {kv_heads} key-value heads, so its head axis splits at most "
            f"{kv_heads} ways, not {ways}. Split the query heads over a (kv, group) "
            "mesh, as head_mesh does, or split the cache along its sequence."
        )
    return P(None, "x")


def head_mesh(kv_heads: int, devices=None):
    """The devices as (kv, group): the cache's heads split over "kv", every query
    head over both axes, so that query head h lands with key-value head h // group."""
    devices = jax.devices() if devices is None else devices
    n = len(devices)
    gqa_shapes(kv_heads)  # checks that the query heads share them evenly
    if HEADS % n:
        raise ValueError(
            f"{HEADS} query heads do not split over {n} devices: use a number of "
            f"devices that divides {HEADS}."
        )
    ways = min(kv_heads, n)  # (2)!
    return jax.make_mesh(
        (ways, n // ways),
        ("kv", "group"),
        devices=devices,
        axis_types=(AxisType.Auto,) * 2,
    )


HEAD_SPLIT = {
    "cache": P(None, "kv"),  # (batch, kv_heads, MAX_LEN, head_dim)
    "wq": P(None, ("kv", "group")),  # every device: HEADS / n query heads
    "wk": P(None, "kv"),
    "wv": P(None, "kv"),
    "wo": P(("kv", "group")),
}


# --8<-- [end:head-mesh]


# --8<-- [start:per-device]
def place(mesh, tree: dict, specs: dict) -> dict:
    return {
        n: jax.device_put(a, NamedSharding(mesh, specs.get(n, P())))
        for n, a in tree.items()
    }


def cache_per_device(batch: int = 8) -> dict:
    """Each kind of attention's cache, split by heads over 8 devices, as placed."""
    found = {}
    print(f"{'attention':<15}{'kv heads':>9}{'whole':>9}{'shard':>18}{'bytes':>9}")
    for name, kv_heads in ATTENTION.items():
        mesh = head_mesh(kv_heads)
        cache = gqa_cache(batch, kv_heads)
        k = place(mesh, cache, {"k": HEAD_SPLIT["cache"]})["k"]
        shard = k.addressable_shards[0].data  # what device 0 holds
        whole = sum(a.nbytes for a in cache.values())
        mine = 2 * shard.nbytes  # keys and values
        print(f"{name:<15}{kv_heads:>9}{whole:>9,}{shard.shape!s:>18}{mine:>9,}")
        found[name] = mesh, k
    return found


# --8<-- [end:per-device]


# --8<-- [start:head-split]
def on_head_split(weights: dict, kv_heads: int, prompt, new_tokens: int = 8):
    """Generate with the query heads split over 8 devices and the cache by HEAD_SPLIT."""
    mesh = head_mesh(kv_heads)
    on = {n: NamedSharding(mesh, HEAD_SPLIT.get(n, P())) for n in weights}
    kv = NamedSharding(mesh, HEAD_SPLIT["cache"])
    whole, cache_on = NamedSharding(mesh, P()), {"k": kv, "v": kv}
    out = (whole, whole, cache_on)  # next token, its logits, the cache
    first = jax.jit(gqa_prefill, in_shardings=(on, cache_on, whole), out_shardings=out)
    step = jax.jit(
        gqa_decode_step,
        in_shardings=(on, cache_on, whole, whole),
        out_shardings=out,
        donate_argnums=1,
    )
    cache = jax.device_put(gqa_cache(prompt.shape[0], kv_heads), cache_on)
    weights, prompt = jax.device_put(weights, on), jax.device_put(prompt, whole)
    return generate(first, step, weights, cache, prompt, new_tokens)


# --8<-- [end:head-split]


def per_device() -> dict:
    # --8<-- [start:per-device-run]
    found = cache_per_device(batch=8)
    # --8<-- [end:per-device-run]
    return found


def head_cap(mesh) -> None:
    # --8<-- [start:head-cap]
    try:
        split_heads(mesh, ATTENTION["grouped-query"])
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:head-cap]


def compare_head_split(prompt) -> dict:
    # --8<-- [start:head-split-run]
    found = {}
    for name, kv_heads in ATTENTION.items():
        weights = init_gqa(kv_heads)
        one = jax.jit(gqa_prefill), jax.jit(gqa_decode_step)
        tokens, logits = generate(*one, weights, gqa_cache(8, kv_heads), prompt, 8)
        got, got_logits = on_head_split(weights, kv_heads, prompt)
        print(
            f"{name}: same tokens as one device: {(got == tokens).all()}, "
            f"logits within {1e-5:g}: {np.abs(got_logits - logits).max() <= 1e-5}"
        )
        found[name] = tokens, logits, got, got_logits
    # --8<-- [end:head-split-run]
    return found


def main() -> None:
    from snippets.advanced.inference.decode import make_prompt
    from snippets.advanced.inference.layouts import make_mesh

    _, prompt = make_prompt()
    per_device()
    head_cap(make_mesh())
    compare_head_split(prompt)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
