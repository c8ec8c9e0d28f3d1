"""The grader of moe_dispatch: its hidden cases and what it checks.

The exercise practises Expert parallelism (advanced/expert-parallel.md);
its statement is docs/exercises/moe_dispatch.md.
"""

from __future__ import annotations

import numpy as np
from jax import P

from snippets.exercises.common import (
    SHARD_MAP_HINT,
    checks,
    make_mesh,
    mesh_words,
    place,
)
from snippets.exercises.grading import (
    Case,
    Exercise,
    Problems,
    ShardedWork,
    Split,
    array_problems,
    sharding_problems,
)

# (devices, tokens per device, d, capacity, seed): the first drops nothing (a device
# cannot send an expert more than its group), the others drop tokens.
CASES = [(8, 8, 4, 8, 0), (8, 8, 4, 2, 1), (4, 12, 3, 3, 2)]


def routing(devices: int, per_device: int, seed: int) -> np.ndarray:
    """Each token's expert, uneven on purpose: low experts are picked most."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, devices + 1)
    return rng.choice(devices, devices * per_device, p=weights / weights.sum())


def slot_table(expert_index: np.ndarray, devices: int, capacity: int):
    """For each expert and slot, the token it holds (-1: none); each token's place in
    its expert's queue on its device."""
    per_device = len(expert_index) // devices
    table = np.full((devices, devices * capacity), -1)
    place_in_queue = np.zeros(len(expert_index), dtype=int)
    for j in range(devices):
        taken = np.zeros(devices, dtype=int)
        for t in range(j * per_device, (j + 1) * per_device):
            e = expert_index[t]
            place_in_queue[t] = taken[e]
            if taken[e] < capacity:
                table[e, j * capacity + taken[e]] = t
            taken[e] += 1
    return table, place_in_queue


def moe_dispatch_cases() -> list[Case]:
    cases = []
    for devices, per_device, d, capacity, seed in CASES:
        rng = np.random.default_rng(100 + seed)
        tokens = rng.standard_normal((devices * per_device, d)).astype(np.float32)
        expert_index = routing(devices, per_device, seed).astype(np.int32)
        table, queue = slot_table(expert_index, devices, capacity)
        if capacity < per_device:  # the case is meant to drop tokens
            assert (queue >= capacity).any(), "a dropping case drops nothing"

        def args(tokens=tokens, expert_index=expert_index, n=devices, c=capacity):
            mesh = make_mesh((n,), ("expert",))
            split = P("expert")
            return place(tokens, mesh, split), place(expert_index, mesh, split), c, mesh

        mesh = make_mesh((devices,), ("expert",))
        dropped = int((queue >= capacity).sum())
        cases.append(
            Case(
                about=(
                    f"{devices * per_device} tokens of d={d} split over "
                    f"{mesh_words(mesh)}, capacity {capacity}: "
                    f"{dropped} token{'s' if dropped != 1 else ''} dropped"
                ),
                args=args,
                check=checks(
                    lambda got, a, t=tokens, e=expert_index, tb=table, q=queue: (
                        received_problems(got, t, e, tb, q, a[2], a[3].shape["expert"])
                    ),
                    lambda got, a: sharding_problems(got, a[3], P("expert")),
                ),
            )
        )
    return cases


def received_problems(
    got,
    tokens: np.ndarray,
    expert_index: np.ndarray,
    table: np.ndarray,
    queue: np.ndarray,
    capacity: int,
    n: int,
) -> Problems:
    expected = np.where(table[..., None] >= 0, tokens[np.maximum(table, 0)], 0.0)
    problems = array_problems(got, expected, dtype=np.float32)
    if not problems:
        return []
    shape = np.shape(got)
    if shape != expected.shape:
        per_device = len(tokens) // n
        if len(shape) == 3 and shape[0] == 8 != n:
            problems.append(
                f"This case's mesh has {n} devices, so there are {n} experts, but the "
                f"result has 8 rows: take the number of devices from "
                f"mesh.shape['expert'] instead of writing 8."
            )
        elif shape == (n, n * per_device, tokens.shape[1]):
            problems.append(
                f"That is {per_device} slots per expert from each device, one for "
                f"every token of a group, but the capacity is {capacity}: give each "
                f"expert `capacity` slots in the buffer, and drop the tokens that find "
                f"them full."
            )
        else:
            problems.append(
                "Let each device return its expert's slots from all devices as one "
                "(1, devices * capacity, d) block, with out_specs=P('expert')."
            )
        return problems
    return [
        *problems,
        slot_problem(np.asarray(got), tokens, expert_index, table, queue, capacity),
    ]


def slot_problem(got, tokens, expert_index, table, queue, capacity: int) -> str:
    """The first slot that holds the wrong thing, and what that says about the code."""
    per_device = len(tokens) // table.shape[0]

    def which(row) -> int | None:
        """The token a slot holds: its index, -1 for zeros, None for anything else."""
        if not row.any():
            return -1
        same = np.flatnonzero(np.isclose(tokens, row, rtol=1e-5, atol=1e-6).all(axis=1))
        return int(same[0]) if len(same) else None

    def where(t: int):
        for e, s in np.ndindex(table.shape):
            if which(got[e, s]) == t:
                return e, s
        return None

    for e, s in np.ndindex(table.shape):
        want, have = int(table[e, s]), which(got[e, s])
        if have == want:
            continue
        j, c = divmod(s, capacity)
        if have is None:
            return (
                f"Slot {c} of what expert {e} received from device {j} holds no single "
                f"token: several tokens were added into one slot. Each slot holds one "
                f"token, the one whose place in its expert's queue is that slot; tokens "
                f"whose place is `capacity` or more are dropped, not written."
            )
        if have == -1:
            found = where(want)
            if found is None:
                return (
                    f"Expert {e} did not receive tokens[{want}] from device {j}, though "
                    f"it is within the capacity ({capacity}): it is token number "
                    f"{queue[want]} (counting from 0) that device {j} routed to expert "
                    f"{e}, so it belongs in slot {queue[want]}."
                )
            have, (e, s) = want, found
            j, c = divmod(s, capacity)
        routed, sender = int(expert_index[have]), have // per_device
        if routed != e:
            return (
                f"Expert {e} received tokens[{have}], which was routed to expert "
                f"{routed}: the all_to_all sent pieces of the buffer to the wrong "
                f"devices. It cuts split_axis into one piece per device and sends piece "
                f"e to device e, so split the buffer's expert dimension (split_axis=0), "
                f"and join what arrives along the slots (concat_axis=1)."
            )
        if sender != j:
            return (
                f"Expert {e}'s slots {j * capacity} to {(j + 1) * capacity - 1} are for "
                f"the tokens device {j} sent, but they hold tokens[{have}], from device "
                f"{sender}: join what arrives along the slots (concat_axis=1), in the "
                f"order of the devices that sent it."
            )
        if queue[have] >= capacity:
            return (
                f"Expert {e} received tokens[{have}], which is token number "
                f"{queue[have]} (counting from 0) that device {j} routed to it; with a "
                f"capacity of {capacity}, only numbers 0 to {capacity - 1} fit. Drop "
                f"the tokens that find their expert's slots full."
            )
        return (
            f"tokens[{have}] is in slot {c} of what expert {e} received from device "
            f"{j}, but belongs in slot {queue[have]}: it is token number {queue[have]} "
            f"(counting from 0) that device {j} routed to expert {e}."
        )
    return "The values differ only slightly: keep float32, and do not scale the tokens."


def split(what: str, argument: int) -> Split:
    return Split(
        argument=argument,
        what=what,
        axis="expert",
        devices=lambda args: (
            args[3].shape["expert"],
            "every device of the mesh's axis 'expert' holds a group of tokens.",
        ),
    )


EXERCISE = Exercise(
    name="moe_dispatch",
    title="Tokens to their experts with all_to_all",
    params=("tokens", "expert_index", "capacity", "mesh"),
    practises="advanced/expert-parallel.md",
    solution="snippets/exercises/moe_dispatch/solution.py:solution",
    cases=moe_dispatch_cases,
    requires=("shard_map", "all_to_all"),
    forbids=("all_gather", "psum", "psum_scatter"),
    traced=(0, 1),
    on_device=True,
    sharded=ShardedWork(
        splits=(split("the tokens", 0), split("the expert indices", 1)),
        out_specs=P("expert"),
    ),
    on_error={
        "all_to_all split_axis": (
            "all_to_all cuts split_axis into one piece per device, and sends piece e "
            "to device e: that is the buffer's expert dimension (axis 0), whose size "
            "is the number of devices."
        ),
    },
    hints={
        "shard_map": SHARD_MAP_HINT,
        "all_to_all": (
            "Build each device's (n, capacity, d) buffer and send its row e to device "
            "e with jax.lax.all_to_all."
        ),
        "all_gather": (
            "Gathering the tokens copies all of them to every device, and every device "
            "then repeats the routing; an all_to_all of the buffer sends each device "
            "only the slots of its own expert."
        ),
        "psum": (
            "Adding up buffers from every device copies the work to all of them; an "
            "all_to_all of the buffer sends each device only the slots of its own "
            "expert."
        ),
    },
)
