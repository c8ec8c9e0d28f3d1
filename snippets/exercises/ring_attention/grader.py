"""The grader of ring_attention: its hidden cases and what it checks.

The exercise practises Sequence and context parallelism (advanced/sequence-parallel.md);
its statement is docs/exercises/ring_attention.md.

Wrong values are compared with NumPy models of the usual mistakes (a ring turning the other
way than its mask assumes, an online softmax that never rescales), so that the grader can
name the mistake rather than only the first wrong number.
"""

from __future__ import annotations

import numpy as np
from jax import P

from snippets.exercises.common import SHARD_MAP_HINT, make_mesh, mesh_words, place
from snippets.exercises.grading import (
    Case,
    Exercise,
    Problems,
    Program,
    ShardedWork,
    Split,
    array_problems,
    sharding_problems,
)

RTOL, ATOL = 1e-4, 1e-5

# (devices, positions, features, scale of q and k): the first case is the page's size;
# then 5 positions per device against 8 features, 4 devices with 10 each (more than 8),
# and scores of a few hundred.
SIZES = [(8, 64, 16, 1.0), (8, 40, 8, 1.0), (4, 40, 8, 1.0), (8, 32, 8, 12.0)]


def simulated_ring(
    q, k, v, n: int, *, sends: str = "right", rescale: bool = True, masked: bool = True
):
    """Ring attention in float64, device by device, hop by hop.

    The mask always assumes that after hop h device d holds device (d - h) mod n's keys,
    which is true when every device sends to the right. `sends="left"` models a ring that
    turns the other way under that mask; `rescale=False` an online softmax that adds each
    block's sums without rescaling what came before; `masked=False` no causal mask.
    """
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    block = q.shape[0] // n
    out = np.empty((q.shape[0], v.shape[1]))
    for d in range(n):
        rows = slice(d * block, (d + 1) * block)
        queries = np.arange(rows.start, rows.stop)[:, None]
        top = np.full(block, -np.inf)
        denominator, numerator = np.zeros(block), np.zeros((block, v.shape[1]))
        for hop in range(n):
            held = (d - hop) % n if sends == "right" else (d + hop) % n
            keys = (d - hop) % n * block + np.arange(block)
            there = slice(held * block, (held + 1) * block)
            scores = q[rows] @ k[there].T / np.sqrt(q.shape[1])
            if masked:
                scores = np.where(keys <= queries, scores, -np.inf)
            new_top = np.maximum(top, scores.max(axis=1))
            factor = np.exp(top - new_top) if rescale else np.ones(block)
            weights = np.exp(scores - new_top[:, None])
            denominator = denominator * factor + weights.sum(axis=1)
            numerator = numerator * factor[:, None] + weights @ v[there]
            top = new_top
        out[rows] = numerator / denominator[:, None]
    return out


def causal_attention(q, k, v):
    return simulated_ring(q, k, v, 1)  # one device: the plain causal softmax


OVERFLOW = (
    "{bad} of the results are NaN or infinite, in a case whose scores reach a few "
    "hundred: exp of such a score overflows float32. Subtract each query's running "
    "maximum from its scores before exp, and when a block raises the maximum, "
    "multiply the sums so far by exp(old max - new max)."
)
DIRECTION = (
    "These are the values of a ring that sends each block to the left while the mask "
    "assumes that blocks arrive from the left: after hop h, device d holds the keys of "
    "device (d + h) mod n, not (d - h) mod n, so the causal mask hides the wrong keys. "
    "Send to the right, [(i, (i + 1) % n) for i in range(n)], or mask with the "
    "positions of the block the device really holds."
)
NO_RESCALE = (
    "These are the values of an online softmax that never rescales: when a block "
    "raises a query's running maximum, the denominator and the numerator summed so far "
    "were weighted by exp(score - old max) and must be multiplied by "
    "exp(old max - new max) before the block's terms are added."
)
HARD_CODED = (
    f"It was right on case 1 ({SIZES[0][0]} devices, {SIZES[0][1]} positions); this "
    "case has {n} devices and "
    "{positions} positions, {block} per device. Look for a number written into the "
    "code: read the number of devices from mesh.shape['seq'] and the block length "
    "from the block's shape inside the body."
)
NO_MASK = (
    "These are the values of attention without the causal mask: every query sees "
    "every key. Hide the scores of keys whose position is after the query's "
    "(jnp.where(keys <= queries, scores, -jnp.inf)), with the positions worked out "
    "from jax.lax.axis_index('seq') and the hop."
)
UNSPLIT = (
    "Return the shard_map's result as it comes out, split over 'seq' "
    "(out_specs=P('seq')): gathering it copies the whole output to every device."
)


def close(values: np.ndarray, expected: np.ndarray) -> bool:
    return bool(np.allclose(values, expected, rtol=RTOL, atol=ATOL))


def attention_problems(got, mesh, q, k, v, case: int) -> Problems:
    n = mesh.shape["seq"]
    problems = sharding_problems(got, mesh, P("seq"))
    if problems:
        if isinstance(got, np.ndarray) or getattr(got, "is_fully_replicated", False):
            problems.append(UNSPLIT)
        return problems
    expected = causal_attention(q, k, v)
    problems = array_problems(got, expected, rtol=RTOL, atol=ATOL, dtype=np.float32)
    if not problems or np.shape(got) != expected.shape:
        return problems
    values = np.asarray(got)
    if bad := int((~np.isfinite(values)).sum()):
        problems.append(OVERFLOW.format(bad=bad))
    elif close(values, simulated_ring(q, k, v, n, sends="left")):
        problems.append(DIRECTION)
    elif close(values, simulated_ring(q, k, v, n, rescale=False)):
        problems.append(NO_RESCALE)
    elif close(values, simulated_ring(q, k, v, 1, masked=False)):
        problems.append(NO_MASK)
    elif case > 1:
        problems.append(HARD_CODED.format(n=n, positions=len(q), block=len(q) // n))
    return problems


def ring_attention_cases() -> list[Case]:
    rng = np.random.default_rng(2024)
    cases = []
    for number, (devices, positions, features, scale) in enumerate(SIZES, 1):
        q, k = (scale * rng.standard_normal((2, positions, features))).astype(
            np.float32
        )
        v = rng.standard_normal((positions, features)).astype(np.float32)

        def args(q=q, k=k, v=v, devices=devices):
            mesh = make_mesh((devices,), ("seq",))
            return (*(place(a, mesh, P("seq")) for a in (q, k, v)), mesh)

        about = (
            f"q, k, v = float32[{positions},{features}] split as P('seq') over "
            f"{mesh_words(make_mesh((devices,), ('seq',)))}"
        )
        if scale != 1:
            about += ", scores of a few hundred"
        cases.append(
            Case(
                about=about,
                args=args,
                check=lambda got, a, q=q, k=k, v=v, c=number: attention_problems(
                    got, a[3], q, k, v, c
                ),
            )
        )
    return cases


ALL_BLOCKS = (
    "its shard_map body holds the blocks of every device at once: {what}, while "
    "one device's block is {block} positions. The ring only brought the blocks "
    "together, and the softmax ran over the whole sequence, so each device's memory "
    "grows with the ring: that is what ring attention saves. Keep one block of k and "
    "v at a time: fold each block into a running maximum, denominator and numerator "
    "(the online softmax) as it arrives, then pass it on."
)


def one_block_problems(fn, args, program: Program) -> Problems:
    """No value made from k or v in the shard_map body spans the whole sequence: an
    axis as long as all the positions (blocks concatenated), or, where the number of
    devices is no other size of the case, an axis of one entry per device (blocks
    stacked). A block, its scores, the running sums and any broadcast of them have
    only axes of the block's length, d, or 2 (k and v stacked together)."""
    q, _, v, mesh = args
    n, positions = mesh.shape["seq"], q.shape[0]
    block = positions // n
    stacked = n not in (block, q.shape[1], v.shape[1], 1, 2)
    for step in program.steps:
        made = frozenset().union(*step.operands) & {1, 2}
        if not step.manual or not made:
            continue
        for shape in step.out_shapes:
            if positions in shape or (stacked and n in shape):
                names = " and ".join("kv"[i - 1] for i in sorted(made))
                span = (
                    f"all {positions} positions"
                    if positions in shape
                    else f"the {n} devices' blocks"
                )
                what = f"an array of shape {shape} made from {names}, with {span}"
                return [ALL_BLOCKS.format(what=what, block=block)]
    return []


def every_device(args) -> tuple[int, str]:
    n = args[3].shape["seq"]
    return n, f"every device of the mesh's axis 'seq' ({n}) holds one block."


EXERCISE = Exercise(
    name="ring_attention",
    title="Causal ring attention with ppermute",
    params=("q", "k", "v", "mesh"),
    practises="advanced/sequence-parallel.md",
    solution="snippets/exercises/ring_attention/solution.py:solution",
    cases=ring_attention_cases,
    requires=("shard_map", "ppermute"),
    forbids=("all_gather", "psum", "psum_scatter", "all_to_all"),
    traced=(0, 1, 2),
    on_device=True,
    sharded=ShardedWork(
        splits=tuple(
            Split(
                argument=i,
                what=f"the positions of {name}",
                axis="seq",
                devices=every_device,
            )
            for i, name in enumerate("qkv")
        ),
        out_specs=P("seq"),
    ),
    rules=one_block_problems,
    rules_words=("one block of k and v at a time",),
    hints={
        "shard_map": SHARD_MAP_HINT,
        "ppermute": "Pass the blocks of k and v round the ring with jax.lax.ppermute.",
        "all_gather": (
            "Gathering k and v gives every device the whole sequence, the memory ring "
            "attention saves: pass their blocks round the ring with jax.lax.ppermute."
        ),
        "psum": "Nothing needs adding up across devices: each device owns its queries.",
    },
    on_error={
        "ppermute sources and destinations must be unique": (
            "the pairs of a ppermute must name each device of the axis once: build "
            "them from n = mesh.shape['seq'], which is not 8 in every case, rather "
            "than from a number written into the code."
        ),
        "Incompatible shapes for broadcasting": (
            "the hidden cases have other lengths than 64 positions over 8 devices: "
            "take the block length from the block's shape inside the body, not from a "
            "number written into the code."
        ),
    },
)
