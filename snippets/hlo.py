"""Read the collectives out of a compiled program: the helper the pages show.

Pages include the `count-collectives` section and call it on `jax.jit(f).lower(...).compile()`;
tests import it to assert what it reads from CPU programs and from stored CPU, GPU and TPU
programs (tests/test_hlo.py).
"""

# --8<-- [start:count-collectives]
import math
import re
from typing import NamedTuple

import numpy as np

COLLECTIVES = (
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "all-to-all",
    "collective-permute",
)
# `%name = shape opcode(operands), attributes`; a shape may be a tuple `(f32[8], s32[])`.
INSTRUCTION = re.compile(r"\s*(ROOT )?%(\S+) = (\(.*?\)|\S+) ([\w-]+)\(([^)]*)\)(.*)")
CALLS = re.compile(r"\b(body|calls|to_apply|branch_computations)=(\{[^}]*\}|%[\w.-]+)")
GROUPS = re.compile(  # how XLA prints who takes part: lists, iota, named mesh axes
    r"(?:replica_groups|source_target_pairs)=(?:(?P<list>\{[\d,{}]*\})"
    r"|\[(?P<shape>[\d,]+)\]<=\[(?P<iota>[\d,]+)\](?:T\((?P<perm>[\d,]+)\))?"
    r"|mesh\[(?P<axes>[^\]]*)\] \{(?P<over>'[^']+'(?:,'[^']+')*)\})"
)


class Collective(NamedTuple):
    kind: str  # one of COLLECTIVES
    result: str  # what it leaves on one device, e.g. "f32[1024,4096]"
    result_bytes: int
    groups: list[list[int]]  # the devices that take part together (a permute: pairs)
    group_size: int | None  # devices per group (None for a permute)
    wire_bytes: float  # bytes one device sends, by the ring model
    runs: int | None  # runs per call of the program (None: no trip count printed)


def collectives(compiled) -> list[Collective]:
    """Every collective of a compiled program (or of its text), each once, per device.

    Reads CPU, GPU and TPU programs: an async `-start`/`-done` pair, and TPU's gather
    printed in each fusion of its async chain, are one collective; TPU's reduce-scatter
    (a fusion that all-reduces, then keeps a dynamic-slice) is a reduce-scatter. A loop's
    collective is printed once but runs every iteration: `runs` multiplies the trip
    counts CPU and GPU print (TPU prints none). Ring model, V the whole array, N devices
    per group: all-gather and reduce-scatter send (N-1)/N * V, all-reduce 2(N-1)/N * V,
    all-to-all (N-1)/N of the block, collective-permute the block.
    """
    text = compiled if isinstance(compiled, str) else compiled.as_text()
    devices = int((re.search(r"num_partitions=(\d+)", text) or [0, 1])[1])
    code, runs, fused = {}, {}, set()  # per computation: instructions, runs per call
    for line in text.splitlines():
        if head := re.match(r"(ENTRY )?%(\S+) ", line):
            code[name := head[2]], runs[name] = [], 1 if head[1] else None
        elif instruction := INSTRUCTION.match(line):
            code[name].append(instruction.groups())
    for name in reversed(code):  # callers come after what they call
        for *_, attrs in code[name]:
            trips = re.search(r'"known_trip_count":\{"n":"(\d+)"', attrs)
            for key, called in CALLS.findall(attrs):
                n = None if key == "branch_computations" else runs[name]
                if key == "body":  # a loop's body runs trip-count times
                    n = n * int(trips[1]) if n and trips else None
                for callee in re.findall(r"%([\w.-]+)", called):
                    runs[callee] = n
                    if "kind=kCustom" in attrs:
                        fused.add(callee)
    found, chains = [], set()
    for name, instructions in code.items():
        root = next((i for i in instructions if i[0]), [None] * 6)
        done = {a[1:]: shape for _, _, shape, op, a, _ in instructions if "-done" in op}
        for _, label, shape, op, _, attrs in instructions:
            kind = op.removesuffix("-start")
            if op == "send" and "megascale_transfer_type" in attrs:  # between slices
                kind = re.search(r'type="(\w+)"', attrs)[1].lower().replace("_", "-")
                slices = re.search(r'target="\{([\d,]+)', attrs)[1].count(",") + 1
                shape, groups = shape[1:].split(", ")[0], [list(range(slices))]
            elif kind in COLLECTIVES:
                groups = device_groups(attrs, devices)
            else:
                continue
            if "async_collective_fusion_config" in attrs:  # TPU prints it per step
                if (chain := re.search(r"channel_id=\d+", attrs)[0]) in chains:
                    continue
                chains.add(chain)
            if op.endswith("-start"):  # an async pair: the result is the done's
                shape = done[label]
            if kind == "all-reduce" and name in fused and root[3] == "dynamic-slice":
                kind, shape = "reduce-scatter", root[2]  # TPU's all-reduce-scatter
            n = None if kind == "collective-permute" else len(groups[0])
            size, m = nbytes(shape), n or 1
            sent = {"all-reduce": 2 * (m - 1) / m * size, "collective-permute": size}
            sent["reduce-scatter"] = (m - 1) * size  # V is m results
            sent = float(sent.get(kind, (m - 1) / m * size))
            result = re.sub(r"\{[^}]*\}|/\*.*?\*/", "", shape)  # without layouts
            found.append(Collective(kind, result, size, groups, n, sent, runs[name]))
    return found


def ints(text: str) -> list[int]:
    return [int(n) for n in text.split(",") if n]


def device_groups(attrs: str, devices: int) -> list[list[int]]:
    """Who takes part in a collective, group by group, from its attributes."""
    found = GROUPS.search(attrs)
    if found is None:
        raise ValueError(f"replica groups this helper cannot read: {attrs[:160]}")
    if found["list"]:  # {{0,1},{2,3}}; {} is one group of every device
        groups = [ints(g) for g in re.findall(r"\{([\d,]+)\}", found["list"])]
        return groups or [list(range(devices))]
    if found["iota"]:  # [4,2]<=[2,4]T(1,0): ids 0..7 as 2x4, transposed, 4 rows
        ids = np.arange(math.prod(ints(found["iota"]))).reshape(ints(found["iota"]))
        ids = ids.transpose(ints(found["perm"])) if found["perm"] else ids
        return ids.reshape(ints(found["shape"])).tolist()
    # mesh['x'=2,'y'=4] {'y'}: the devices that differ only along the named axes
    axes = dict(re.findall(r"'([^']+)'=(\d+)", found["axes"]))
    over = [list(axes).index(a) for a in re.findall(r"'([^']+)'", found["over"])]
    rest = [i for i in range(len(axes)) if i not in over]
    ids = np.arange(math.prod(sizes := [int(n) for n in axes.values()]))
    ids, size = ids.reshape(sizes), math.prod(sizes[i] for i in over)
    return ids.transpose(rest + over).reshape(-1, size).tolist()


def nbytes(shape: str) -> int:
    """Bytes of the arrays in a shape: `f32[4,8]`, `(f32[], bf16[8]{0})`, ..."""
    arrays = re.findall(r"([a-z]\w*)\[([\d,]*)\]", re.sub(r"\{[^}]*\}", "", shape))
    bits = [(int((re.search(r"\d+", t) or [8])[0]), ints(d)) for t, d in arrays]
    return sum(math.ceil(b * math.prod(dims) / 8) for b, dims in bits)  # pred: 8


def count_collectives(compiled) -> dict[str, int]:
    """How many of each collective a compiled program holds (one in a loop: once)."""
    kinds = [c.kind for c in collectives(compiled)]
    return {kind: kinds.count(kind) for kind in COLLECTIVES if kind in kinds}


def print_collectives(compiled, per_collective: bool = False) -> None:
    """Print how many of each collective a program holds, or each one with its bytes."""
    if per_collective:
        print("collective          group  result bytes  sent (ring)  runs  result")
        for c in collectives(compiled):
            print(f"{c.kind:<20}{c.group_size or '-':>5}{c.result_bytes:>14,}", end="")
            print(f"{c.wire_bytes:>13,.0f}{c.runs or '?':>6}  {c.result}")
        print(
            "bytes per device, sent by the ring model; runs per call (?: not printed)"
        )
        return
    counts = count_collectives(compiled)
    if not counts:
        print("collectives: none")
    for kind, n in counts.items():
        print(f"{kind:<20}{n}")


# --8<-- [end:count-collectives]
