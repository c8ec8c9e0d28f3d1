"""Ulysses attention: an all-to-all trades the split over positions for one over heads.

Run `python -m snippets.advanced.sequence_parallel.ulysses` to print what the page shows.
"""

import math
from functools import partial

import jax
import jax.numpy as jnp
from jax import P
from jax.sharding import AxisType, Mesh, NamedSharding

# On the page, these are defined by earlier blocks.
from snippets.advanced.sequence_parallel.attention import attention
from snippets.advanced.sequence_parallel.ring import ring_attention
from snippets.hlo import print_collectives, read_collectives


# --8<-- [start:ulysses]
def per_head(one_head, **options):
    """Run a one-head attention on every head of (positions, heads, d) arrays."""
    return jax.vmap(partial(one_head, **options), in_axes=1, out_axes=1)


def ulysses_attention(q, k, v, mesh, causal=False):
    """attention(q, k, v, causal) for every head; q, k, v are (positions, heads, d),
    split over the positions (P("seq")) on entry and on exit."""
    n = mesh.shape.get("seq", 0)
    if n == 0 or len(mesh.axis_names) != 1:
        raise ValueError(
            f"This needs a 1-D mesh with one axis 'seq', not {dict(mesh.shape)}."
        )
    if q.ndim != 3 or q.shape != k.shape or k.shape[:2] != v.shape[:2]:
        raise ValueError(
            f"q, k and v must be (positions, heads, d) with one shape for q and k; "
            f"got {q.shape}, {k.shape}, {v.shape}."
        )
    positions, heads = q.shape[:2]
    if heads % n or positions % n:
        raise ValueError(
            f"Ulysses splits the positions and then the heads over the {n} devices "
            f"of 'seq'; got {positions} positions and {heads} heads: use multiples "
            f"of {n}, a 'seq' axis whose size divides both, or ring attention, "
            "which splits the positions only."
        )

    def body(q, k, v):  # (positions / n, heads, d): this device's positions
        to_heads = partial(
            jax.lax.all_to_all, axis_name="seq", split_axis=1, concat_axis=0, tiled=True
        )
        q, k, v = to_heads(q), to_heads(k), to_heads(v)  # (1)!
        out = per_head(attention, causal=causal)(q, k, v)  # (2)!
        return jax.lax.all_to_all(out, "seq", split_axis=0, concat_axis=1, tiled=True)

    ulysses = jax.shard_map(body, mesh=mesh, in_specs=P("seq"), out_specs=P("seq"))
    return jax.jit(ulysses)(q, k, v)


# --8<-- [end:ulysses]


def make_heads(by_position: NamedSharding):
    # --8<-- [start:heads]
    qh, kh, vh = jax.random.normal(jax.random.key(2), (3, 64, 8, 16))  # 8 heads
    qh_seq, kh_seq, vh_seq = (jax.device_put(a, by_position) for a in (qh, kh, vh))
    print(jax.typeof(qh_seq), "per device:", qh_seq.addressable_shards[0].data.shape)
    # --8<-- [end:heads]
    return (qh, kh, vh), (qh_seq, kh_seq, vh_seq)


def run_ulysses(qh, kh, vh, qh_seq, kh_seq, vh_seq, mesh: Mesh):
    # --8<-- [start:run-ulysses]
    for causal in (False, True):
        uly = ulysses_attention(qh_seq, kh_seq, vh_seq, mesh, causal)
        ring = per_head(ring_attention, mesh=mesh, causal=causal)(
            qh_seq, kh_seq, vh_seq
        )
        one = per_head(attention, causal=causal)(qh, kh, vh)
        print(
            f"causal={causal!s:<5} {jax.typeof(uly)}  within {1e-5:g} of one "
            f"device: {jnp.abs(uly - one).max() <= 1e-5}, "
            f"of the ring: {jnp.abs(uly - ring).max() <= 1e-5}"
        )
    # --8<-- [end:run-ulysses]
    return uly, ring, one


def ulysses_program(qh_seq, kh_seq, vh_seq, mesh: Mesh):
    # --8<-- [start:ulysses-hlo]
    uly_program = (
        jax.jit(partial(ulysses_attention, mesh=mesh))
        .lower(qh_seq, kh_seq, vh_seq)
        .compile()
    )
    print_collectives(uly_program)
    # --8<-- [end:ulysses-hlo]
    return uly_program


# --8<-- [start:bytes-sent]
def bytes_sent(program):
    """Bytes one device sends in one call of a compiled program, by the ring model."""
    total = 0.0
    for c in read_collectives(program):
        if c.runs is None:
            raise ValueError(f"No trip count for {c.kind}: bytes cannot be summed.")
        total += c.wire_bytes * c.runs
    return total


def ring_and_ulysses(positions, n, heads=8, d=16):
    """Compile both for n CPU devices; bytes of one device's q, and each one's sent."""
    sub = jax.make_mesh(
        (n,), ("seq",), axis_types=(AxisType.Explicit,), devices=jax.devices()[:n]
    )
    split = NamedSharding(sub, P("seq"))
    x = jax.ShapeDtypeStruct((positions, heads, d), jnp.float32, sharding=split)
    ring = jax.jit(per_head(ring_attention, mesh=sub)).lower(x, x, x).compile()
    uly = jax.jit(partial(ulysses_attention, mesh=sub)).lower(x, x, x).compile()
    block = math.prod(split.shard_shape(x.shape)) * x.dtype.itemsize
    return block, bytes_sent(ring), bytes_sent(uly)


# --8<-- [end:bytes-sent]


def print_bytes() -> dict:
    # --8<-- [start:bytes-table]
    sent_table = {}
    print("positions devices  block B  ring sends  Ulysses sends  ring/Ulysses")
    for positions, n in ((64, 2), (64, 4), (64, 8), (128, 8)):
        block, ring_b, uly_b = ring_and_ulysses(positions, n)
        sent_table[positions, n] = block, ring_b, uly_b
        print(
            f"{positions:>9} {n:>7} {block:>8,} {ring_b:>11,.0f} {uly_b:>14,.0f}"
            f" {ring_b / uly_b:>13g}"
        )
    # --8<-- [end:bytes-table]
    return sent_table


def main() -> None:
    from snippets.advanced.sequence_parallel.ring import seq_mesh

    mesh = seq_mesh()
    heads, placed = make_heads(NamedSharding(mesh, P("seq")))
    run_ulysses(*heads, *placed, mesh)
    ulysses_program(*placed, mesh)
    print_bytes()


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
