"""Ring attention: queries stay, key and value blocks travel round a ring of devices.

Run `python -m snippets.advanced.sequence_parallel.ring` to print what the page shows.
"""

# --8<-- [start:imports]
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import P
from jax.sharding import AxisType, Mesh, NamedSharding

# --8<-- [end:imports]
# On the page, these are defined by earlier blocks.
from snippets.advanced.sequence_parallel.attention import (
    accumulate,
    attention,
    finish,
    start,
)
from snippets.hlo import print_collectives


def seq_mesh() -> Mesh:
    # --8<-- [start:mesh]
    mesh = jax.make_mesh((8,), ("seq",), axis_types=(AxisType.Explicit,))
    # --8<-- [end:mesh]
    return mesh


def place(q, k, v, mesh: Mesh) -> tuple[jax.Array, jax.Array, jax.Array]:
    # --8<-- [start:place]
    by_position = NamedSharding(mesh, P("seq"))  # split dimension 0, the positions
    q_seq, k_seq, v_seq = (jax.device_put(a, by_position) for a in (q, k, v))
    print(jax.typeof(k_seq), "per device:", k_seq.addressable_shards[0].data.shape)
    # --8<-- [end:place]
    return q_seq, k_seq, v_seq


# --8<-- [start:ring]
def ring_attention(q, k, v, mesh, causal=False):
    """attention(q, k, v, causal) with q, k, v split over the positions (P("seq")).

    Each device keeps its block of queries; the blocks of keys and values go round
    the ring of devices, one hop at a time, so no device holds all of k or v.
    """
    n = mesh.shape.get("seq", 0)
    if n == 0 or len(mesh.axis_names) != 1:
        raise ValueError(
            f"This needs a 1-D mesh with one axis 'seq', not {dict(mesh.shape)}."
        )
    if q.shape != k.shape or k.shape[0] != v.shape[0] or k.shape[0] % n:
        raise ValueError(
            f"q and k must have one shape, v as many positions, and the positions "
            f"must split over the {n} devices; got {q.shape}, {k.shape}, {v.shape}."
        )
    send_right = [(i, (i + 1) % n) for i in range(n)]  # (1)!

    def body(q, k, v):  # this device's blocks, (positions / n, d)
        me = jax.lax.axis_index("seq")
        block = q.shape[0]
        queries = me * block + jnp.arange(block)[:, None]  # (2)!
        carry = start(q, v)
        for hop in range(n):  # (3)!
            if hop:
                k, v = jax.lax.ppermute((k, v), "seq", send_right)
            visible = None
            if causal:
                owner = (me - hop) % n  # (4)!
                keys = owner * block + jnp.arange(block)
                visible = keys <= queries
            carry = accumulate(carry, q, k, v, visible)
        return finish(carry)

    ring = jax.shard_map(body, mesh=mesh, in_specs=P("seq"), out_specs=P("seq"))
    return jax.jit(ring)(q, k, v)


# --8<-- [end:ring]


def run_ring(q, k, v, q_seq, k_seq, v_seq, mesh: Mesh) -> jax.Array:
    # --8<-- [start:run-ring]
    out = ring_attention(q_seq, k_seq, v_seq, mesh)
    print(jax.typeof(out), "per device:", out.addressable_shards[0].data.shape)
    gap = jnp.abs(out - attention(q, k, v)).max()
    print(f"within {1e-5:g} of attention on one device: {gap <= 1e-5}")
    # --8<-- [end:run-ring]
    return out


def ring_program(q_seq, k_seq, v_seq, mesh: Mesh):
    # --8<-- [start:ring-hlo]
    compiled = (
        jax.jit(partial(ring_attention, mesh=mesh))  # (1)!
        .lower(q_seq, k_seq, v_seq)
        .compile()
    )
    print_collectives(compiled)
    # --8<-- [end:ring-hlo]
    return compiled


def run_causal(q, k, v, q_seq, k_seq, v_seq, mesh: Mesh) -> jax.Array:
    # --8<-- [start:run-causal]
    out = ring_attention(q_seq, k_seq, v_seq, mesh, causal=True)
    print(jax.typeof(out))
    gap = jnp.abs(out - attention(q, k, v, causal=True)).max()
    print(f"within {1e-5:g} of causal attention on one device: {gap <= 1e-5}")
    # --8<-- [end:run-causal]
    return out


# --8<-- [start:balance]
def layout(positions, n, zigzag=False):
    """Which positions each of n devices holds: one row per device."""
    chunks = 2 * n if zigzag else n
    if positions % chunks:
        raise ValueError(
            f"{positions} positions do not cut into {chunks} equal chunks for "
            f"{n} devices: use a multiple of {chunks}."
        )
    rows = np.arange(positions).reshape(chunks, -1)
    if not zigzag:
        return rows
    # device d: chunk d from the front and chunk d from the back
    return np.concatenate([rows[:n], rows[::-1][:n]], axis=1)


def causal_work(held):
    """Per device: how many (query, key) pairs the causal mask leaves it to compute."""
    return (held + 1).sum(axis=1)  # query at position p sees keys 0 ... p


# --8<-- [end:balance]


def print_balance() -> None:
    # --8<-- [start:balance-table]
    for zigzag in (False, True):
        held = layout(64, 8, zigzag)
        name = "zigzag" if zigzag else "contiguous"
        print(f"{name:<10} device 0 holds {held[0]}")
        print(f"{'':<10} work per device {causal_work(held)}")
    # --8<-- [end:balance-table]


def main() -> None:
    from snippets.advanced.sequence_parallel.attention import make_data

    q, k, v = make_data()
    mesh = seq_mesh()
    placed = place(q, k, v, mesh)
    run_ring(q, k, v, *placed, mesh)
    ring_program(*placed, mesh)
    run_causal(q, k, v, *placed, mesh)
    print_balance()


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
