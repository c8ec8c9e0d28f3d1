"""Read the collectives out of a compiled program: the helper the pages show.

Pages include the `count-collectives` section and call it on a compiled program,
`jax.jit(f).lower(...).compile()`; tests/test_hlo.py holds it to live CPU programs and
to stored CPU, GPU and TPU programs.
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
# `%name = shape opcode(operands), attributes`; the shape may be a tuple
HLO_LINE = re.compile(r"\s*(ROOT )?%(\S+) = (\(.*?\)|\S+) ([\w-]+)\(([^)]*)\)(.*)")
HLO_CALLS = re.compile(
    r"\b(body|calls|to_apply|branch_computations)=(\{[^}]*\}|%[\w.-]+)"
)
IOTA = r"\[[\d,]+\]<=\[[\d,]+\](?:T\([\d,]+\))?"  # [4,2]<=[2,4]T(1,0)
AXIS = r"'[^']+'(?::\(\d+\)\d+)?"  # 'y', or 'y':(2)2: a part of axis y
HLO_GROUPS = re.compile(  # who takes part, in the three ways XLA prints it
    rf"(?:replica_groups|source_target_pairs)=(?:(?P<list>\{{[\d,{{}}]*\}})"
    rf"|(?P<iota>{IOTA})|mesh\[(?P<mesh>[^\]]*)\]"  # and its device order, if any:
    rf"(?:, device_ids=\((?P<ids>{IOTA}|[\d,]+)\))?"
    rf" \{{(?P<over>{AXIS}(?:,{AXIS})*)\}})"
)


class Collective(NamedTuple):
    kind: str  # one of COLLECTIVES
    result: str  # what it leaves on one device, e.g. "f32[1024,4096]"
    result_bytes: int
    groups: list[list[int]]  # the devices that take part together (a permute: pairs)
    group_size: int | None  # devices per group (None for a permute)
    wire_bytes: float  # bytes one device sends, by the ring model
    runs: int | None  # runs per call of the program (None: no trip count printed)


def read_collectives(compiled) -> list[Collective]:
    """Every collective of a compiled program (or of its text), as one device runs it.

    CPU, GPU and TPU print collectives differently: an async `-start`/`-done` pair, and
    a TPU gather printed in each fusion of its async chain, are one collective; TPU's
    reduce-scatter, a fusion that all-reduces and keeps a dynamic-slice, is one
    reduce-scatter. A collective in a loop is printed once but runs every iteration:
    `runs` multiplies the trip counts CPU and GPU print (TPU prints none). Ring model, N
    devices per group, V the whole array: an all-gather or reduce-scatter sends
    (N-1)/N * V, an all-reduce twice that, an all-to-all (N-1)/N of the block, a
    collective-permute the block.
    """
    text = compiled if isinstance(compiled, str) else compiled.as_text()
    devices = int((re.search(r"num_partitions=(\d+)", text) or [0, 1])[1])
    code, runs, fused = {}, {}, set()  # per computation: instructions, runs per call
    for line in text.splitlines():
        if head := re.match(r"(ENTRY )?%(\S+) ", line):
            code[name := head[2]], runs[name] = [], 1 if head[1] else None
        elif instruction := HLO_LINE.match(line):
            code[name].append(instruction.groups())
    for name in reversed(code):  # callers come after what they call
        for *_, attrs in code[name]:
            trips = re.search(r'"known_trip_count":\{"n":"(\d+)"', attrs)
            for key, called in HLO_CALLS.findall(attrs):
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
                shape, groups = shape[1:].split(", ")[0], [list(range(slices))]  # data
            elif kind in COLLECTIVES:
                groups = replica_groups(attrs, devices)
            else:
                continue
            if "async_collective_fusion_config" in attrs:  # TPU: once per chain step
                if (chain := re.search(r"channel_id=\d+", attrs)[0]) in chains:
                    continue
                chains.add(chain)
            if op.endswith("-start"):  # an async pair: the result is the done's
                shape = done[label]
            if kind == "all-reduce" and name in fused and root[3] == "dynamic-slice":
                kind, shape = "reduce-scatter", root[2]  # TPU's all-reduce-scatter
            n = None if kind == "collective-permute" else len(groups[0])
            size, m = shape_bytes(shape), n or 1
            sent = {"all-reduce": 2 * (m - 1) / m * size, "collective-permute": size}
            sent["reduce-scatter"] = (m - 1) * size  # V is m results
            sent = float(sent.get(kind, (m - 1) / m * size))
            result = re.sub(r"\{[^}]*\}|/\*.*?\*/", "", shape)  # without layouts
            found.append(Collective(kind, result, size, groups, n, sent, runs[name]))
    return found


def replica_groups(attrs: str, devices: int) -> list[list[int]]:
    """Who takes part in a collective, group by group, from its attributes."""
    found = HLO_GROUPS.search(attrs)
    if found is None:
        raise ValueError(f"replica groups this helper cannot read: {attrs[:160]}")
    if found["list"]:  # {{0,1},{2,3}}; {} is one group of every device
        groups = re.findall(r"\{([\d,]+)\}", found["list"])
        return [device_ids(g).tolist() for g in groups] or [list(range(devices))]
    if found["iota"]:
        return device_ids(found["iota"]).tolist()
    # mesh['x'=2,'y'=4] {'y'}: the devices that differ only along the named axes, or
    # parts of axes: 'y':(2)2 is the part of size 2 of y after a part of size 2.
    axes = {a: int(n) for a, n in re.findall(r"'([^']+)'=(\d+)", found["mesh"])}
    parts = re.findall(r"'([^']+)'(?::\((\d+)\)(\d+))?", found["over"])
    parts = [(a, int(pre or 1), int(n or axes[a])) for a, pre, n in parts]
    shape, at = [], {}  # the mesh with its axes cut into those parts
    for axis, size in axes.items():
        done = 1
        for pre, n, i in sorted(
            (p, n, i) for i, (a, p, n) in enumerate(parts) if a == axis
        ):
            shape += [pre // done] if pre != done else []
            at[i], done = len(shape), pre * n
            shape.append(n)
        shape += [size // done] if done != size else []
    over = [at[i] for i in range(len(parts))]
    rest = [d for d in range(len(shape)) if d not in over]
    mesh = device_ids(found["ids"]) if found["ids"] else np.arange(math.prod(shape))
    size = math.prod(shape[d] for d in over)
    return mesh.reshape(shape).transpose(rest + over).reshape(-1, size).tolist()


def device_ids(text: str) -> np.ndarray:
    """Device ids `0,2,1,3`, or `[4,2]<=[2,4]T(1,0)`: 0..7 as 2x4, transposed, 4x2."""
    iota = re.fullmatch(r"\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", text)
    if iota is None:
        return np.array([int(n) for n in text.split(",")])
    shape, dims, perm = (
        [int(n) for n in g.split(",")] if g else 0 for g in iota.groups()
    )
    grid = np.arange(math.prod(dims)).reshape(dims)
    return (grid.transpose(perm) if perm else grid).reshape(shape)


def shape_bytes(shape: str) -> int:
    """Bytes of the arrays in a shape: `f32[4,8]`, `(f32[], bf16[8]{0})`, ..."""
    total, shape = 0, re.sub(r"\{[^}]*\}", "", shape)  # without layouts
    for dtype, dims in re.findall(r"([a-z]\w*)\[([\d,]*)\]", shape):
        bits = int((re.search(r"\d+", dtype) or [8])[0])  # f32: 32, pred: 8
        total += math.ceil(bits * math.prod(int(n) for n in dims.split(",") if n) / 8)
    return total


def count_collectives(compiled) -> dict[str, int]:
    """How many of each collective a compiled program holds (one in a loop: once)."""
    kinds = [c.kind for c in read_collectives(compiled)]
    return {kind: kinds.count(kind) for kind in COLLECTIVES if kind in kinds}


def print_collectives(compiled, per_collective: bool = False) -> None:
    """Print how many of each collective a program holds, or each one with its bytes."""
    if per_collective:
        print("collective          group  result bytes  sent (ring)  runs  result")
        for c in read_collectives(compiled):
            print(f"{c.kind:<20}{c.group_size or '-':>5}{c.result_bytes:>14,}", end="")
            print(f"{c.wire_bytes:>13,.0f}{c.runs or '?':>6}  {c.result}")
        print("bytes per device; sent: by the ring model; runs: per call, ?: unknown")
        return
    counts = count_collectives(compiled)
    if not counts:
        print("collectives: none")
    for kind, n in counts.items():
        print(f"{kind:<20}{n}")


# --8<-- [end:count-collectives]
