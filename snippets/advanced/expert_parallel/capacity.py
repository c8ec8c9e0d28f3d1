"""Capacity: how many tokens each expert takes from a group, which slot each token gets,
and what the layer must compute, token by token, on one device.

Run `python -m snippets.advanced.expert_parallel.capacity` to print what the page shows.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np

# On the page, these are defined by earlier blocks.
from snippets.advanced.expert_parallel.layer import route


# --8<-- [start:capacity]
def capacity(tokens_per_group, experts, factor):
    """Slots per expert for one group of tokens: ceil(factor * tokens / experts)."""
    if tokens_per_group < 1 or experts < 1:
        raise ValueError(
            f"A group needs at least one token and one expert, not {tokens_per_group} "
            f"tokens and {experts} experts."
        )
    if factor <= 0:
        raise ValueError(f"The capacity factor must be positive, not {factor}.")
    return math.ceil(factor * tokens_per_group / experts)


# --8<-- [end:capacity]


# --8<-- [start:slots]
def slots(expert, experts, capacity):
    """The slot each token of a group takes, as (tokens, experts, capacity) 0s and 1s."""
    chosen = jax.nn.one_hot(expert, experts, dtype=jnp.int32)  # (tokens, experts)
    earlier = jnp.cumsum(chosen, axis=0) - chosen  # (1)!
    position = jnp.sum(earlier * chosen, axis=1)  # its place in its expert's queue
    slot = jax.nn.one_hot(position, capacity)  # (2)!
    return chosen[:, :, None] * slot[:, None, :], position


# --8<-- [end:slots]


def slots_example():
    # --8<-- [start:slots-example]
    expert = jnp.array([2, 0, 2, 2, 1, 0, 2, 3])
    mask, position = slots(expert, experts=4, capacity=2)
    print("expert  ", expert)
    print("position", position)
    print("kept    ", mask.sum(axis=(1, 2)).astype(int))
    print("expert 2, slot by token:", mask[:, 2].T.astype(int), sep="\n")
    # --8<-- [end:slots-example]
    return expert, mask, position


# --8<-- [start:reference]
def reference_moe(x, params, groups, capacity=None):
    """The layer on one device, token by token, in NumPy (capacity None: no limit)."""
    x = np.asarray(x)
    if x.ndim != 2 or len(x) % groups:
        raise ValueError(
            f"x of shape {x.shape} does not cut into {groups} equal groups of "
            f"tokens: give it (tokens, d_model) with tokens a multiple of {groups}."
        )
    router, w_in, w_out = (np.asarray(params[k]) for k in ("router", "w_in", "w_out"))
    logits = x @ router
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    y = np.zeros_like(x)
    for group in np.split(np.arange(len(x)), groups):
        taken = np.zeros(router.shape[1], dtype=int)  # slots used, per expert
        for t in group:
            e = probs[t].argmax()
            if capacity is not None and taken[e] == capacity:
                continue  # dropped: its output stays zero
            taken[e] += 1
            hidden = np.maximum(x[t] @ w_in[e], 0)
            y[t] = probs[t, e] * (hidden @ w_out[e])
    return y


# --8<-- [end:reference]


# --8<-- [start:load]
def expert_load(tokens, router, groups, factor):
    """Per expert: the tokens routed to it, and those it has a slot for, all groups."""
    experts = router.shape[1]
    per_group = tokens.reshape(groups, -1, tokens.shape[-1])
    size = capacity(per_group.shape[1], experts, factor)

    @jax.jit
    @jax.vmap  # one group at a time, as each device will do
    def count(group):
        expert, _ = route(group, router)
        mask, _ = slots(expert, experts, size)
        return jnp.bincount(expert, length=experts), mask.sum(axis=(0, 2))

    routed, kept = count(per_group)
    return size, np.asarray(routed.sum(axis=0)), np.asarray(kept.sum(axis=0), int)


def print_load(tokens, router, groups, factor):
    size, routed, kept = expert_load(tokens, router, groups, factor)
    print(f"capacity factor {factor}: {size} slots per expert in each group")
    print(f"{'expert':<8}", *(f"{e:>4}" for e in range(len(routed))))
    for name, row in [("routed", routed), ("kept", kept), ("dropped", routed - kept)]:
        print(f"{name:<8}", *(f"{n:>4}" for n in row))
    print(f"{(routed - kept).sum()} of {routed.sum()} tokens dropped\n")


# --8<-- [end:load]


def load_tables(x, params):
    # --8<-- [start:load-table]
    for factor in (1.0, 2.0):
        print_load(x, params["router"], groups=8, factor=factor)
    # --8<-- [end:load-table]


def main() -> None:
    from snippets.advanced.expert_parallel import layer

    mesh = layer.expert_mesh()
    params, _, x = layer.build(mesh)
    slots_example()
    load_tables(x, params)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
