"""Read the collectives out of a compiled XLA program, as the build's tables need them.

    program = read(jax.jit(f).lower(*args).compile().as_text())
    program.collectives      # one record per collective the program runs
    summarize(program)       # per kind: count, runs, result bytes, wire bytes

`snippets/hlo.py` is the small counter that pages show readers; this is the build's own,
accurate reader. It parses the *compiled* (post-partitioning, scheduled) HLO text, and
knows what a regex over that text gets wrong:

- async pairs (`all-gather-start` / `all-gather-done`, `async-start` wrapping a collective,
  TPU's fusions around `AsyncCollectiveStart` / `AsyncCollectiveDone`, whose all-gather is
  printed again in each fusion of its chain) are one collective;
- a TPU reduce-scatter is a `fusion(...), kind=kCustom, calls=%all-reduce-scatter...` whose
  body is an all-reduce and a dynamic-slice: it is one reduce-scatter, not an all-reduce;
- a collective in a `while` body runs once per iteration: `runs` multiplies the trip counts
  of every loop around it (XLA's `known_trip_count`, or, where a backend does not print it,
  the loop's counter read from its condition and body). A count that cannot be read is
  `None`, never a guess;
- replica groups come in four spellings: `{{0,1},{2,3}}`, `[2,4]<=[8]`,
  `[4,2]<=[2,4]T(1,0)` and `mesh['x'=2,'y'=4] {'y'}`. Device ids are the program's
  partition ids (logical positions in the mesh), not physical device ids.

`wire_bytes` turns a collective into bytes one device sends per run, by the ring model.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

KINDS = (
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "all-to-all",
    "collective-permute",
    "ragged-all-to-all",
)
_KIND_OF = {k: k for k in KINDS} | {f"{k}-start": k for k in KINDS}
# Any opcode that moves data between devices, known to this reader or not: one the reader
# does not know is reported by `Program.unaccounted`, never silently left out of a record.
_COLLECTIVE_OPCODE = re.compile(
    r"^(all-\w[\w-]*|reduce-scatter|collective-\w[\w-]*|ragged-\w[\w-]*)$"
)

# Bits per element; a type not listed here raises rather than being counted as zero.
_BITS = {
    "pred": 8,
    "s2": 2,
    "u2": 2,
    "s4": 4,
    "u4": 4,
    "s8": 8,
    "u8": 8,
    "s16": 16,
    "u16": 16,
    "s32": 32,
    "u32": 32,
    "s64": 64,
    "u64": 64,
    "f16": 16,
    "bf16": 16,
    "f32": 32,
    "f64": 64,
    "c64": 64,
    "c128": 128,
    "token": 0,
}
_ARRAY = re.compile(r"\b([a-z]\w*)\[([\d,]*)\]")
_HEADER = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s*\(.*\{\s*$")
_INSTRUCTION = re.compile(r"^\s*(ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*)$")
_OPCODE = re.compile(r"\s*([\w\-]+)\(")


class HloParseError(ValueError):
    """The text is not compiled HLO this reader understands."""


def element_bits(dtype: str) -> int:
    if dtype in _BITS:
        return _BITS[dtype]
    if dtype.startswith("f8"):  # f8e4m3fn, f8e5m2, ...
        return 8
    if dtype.startswith("f4"):
        return 4
    raise HloParseError(f"unknown element type {dtype!r}")


def arrays(shape: str) -> list[tuple[str, tuple[int, ...]]]:
    """The (dtype, dims) of every array in a shape; layouts `{1,0:T(8,128)}` are ignored."""
    without_layouts = _strip_layouts(shape)
    return [
        (dtype, tuple(int(n) for n in dims.split(",") if n))
        for dtype, dims in _ARRAY.findall(without_layouts)
    ]


def nbytes(shape: str) -> int:
    """Bytes of all the arrays in a (possibly tuple) shape."""
    return sum(
        math.ceil(element_bits(dtype) * math.prod(dims) / 8)
        for dtype, dims in arrays(shape)
    )


def _strip_layouts(shape: str) -> str:
    out, depth = [], 0
    for ch in shape:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return re.sub(r"/\*.*?\*/", "", "".join(out))


def _balanced(text: str, start: int, open_: str = "(", close: str = ")") -> int:
    """Index just past the bracket that closes the one at `start`."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == open_:
            depth += 1
        elif text[i] == close:
            depth -= 1
            if depth == 0:
                return i + 1
    raise HloParseError(f"unbalanced {open_}{close} in: {text[start : start + 200]}")


def _split_top(text: str, sep: str = ",") -> list[str]:
    """Split at `sep` outside any brackets."""
    parts, depth, current = [], 0, []
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


@dataclass
class Instruction:
    name: str
    shape: str
    opcode: str
    operands: list[str]
    attributes: str
    computation: str
    root: bool = False

    def attribute(self, key: str) -> str | None:
        """The value of `key=...` (a name, a number, or a bracketed group)."""
        found = re.search(rf"(?:^|[\s,]){re.escape(key)}=", self.attributes)
        if not found:
            return None
        start = found.end()
        spelled = _MESH.match(self.attributes, start) or _IOTA.match(
            self.attributes, start
        )
        if spelled:
            return spelled.group(0)
        if start < len(self.attributes) and self.attributes[start] in "{[(":
            open_ = self.attributes[start]
            close = {"{": "}", "[": "]", "(": ")"}[open_]
            return self.attributes[
                start : _balanced(self.attributes, start, open_, close)
            ]
        return re.match(r"[^,\s]*", self.attributes[start:]).group(0)

    def called(self, key: str) -> list[str]:
        value = self.attribute(key)
        if value is None:
            return []
        return [
            v.strip().lstrip("%") for v in value.strip("{}").split(",") if v.strip()
        ]


@dataclass
class Computation:
    name: str
    entry: bool
    instructions: dict[str, Instruction] = field(default_factory=dict)
    root: Instruction | None = None
    parameters: dict[int, Instruction] = field(default_factory=dict)


@dataclass
class Module:
    name: str
    num_partitions: int | None
    computations: dict[str, Computation]
    entry: str


def parse(text: str) -> Module:
    """Split compiled HLO text into computations of instructions."""
    header = re.search(r"^HloModule\s+([\w.\-]+)(.*)$", text, re.M)
    if not header:
        raise HloParseError("no `HloModule` line: is this `compiled.as_text()`?")
    partitions = re.search(r"num_partitions=(\d+)", header.group(2))
    computations: dict[str, Computation] = {}
    current: Computation | None = None
    entry = None
    for line in text.splitlines():
        if current is None:
            head = _HEADER.match(line)
            if head and not line.startswith("HloModule"):
                current = Computation(name=head.group(2), entry=bool(head.group(1)))
                if current.entry:
                    entry = current.name
            continue
        if line.strip() == "}":
            computations[current.name] = current
            current = None
            continue
        instruction = _parse_instruction(line, current.name)
        if instruction is None:
            continue
        current.instructions[instruction.name] = instruction
        if instruction.root:
            current.root = instruction
        if instruction.opcode == "parameter":
            current.parameters[int(instruction.operands[0])] = instruction
    if entry is None:
        raise HloParseError("no ENTRY computation")
    return Module(
        name=header.group(1),
        num_partitions=int(partitions.group(1)) if partitions else None,
        computations=computations,
        entry=entry,
    )


def _parse_instruction(line: str, computation: str) -> Instruction | None:
    match = _INSTRUCTION.match(line)
    if not match:
        return None
    root, name, rest = match.groups()
    if rest.startswith("("):
        end = _balanced(rest, 0)
        shape, rest = rest[:end], rest[end:]
    else:
        shape, _, rest = rest.partition(" ")
        rest = " " + rest
    op = _OPCODE.match(rest)
    if not op:
        return None
    start = op.end() - 1
    end = _balanced(rest, start)
    operands = [
        re.sub(r"/\*.*?\*/", "", o).strip().split()[-1].lstrip("%")
        for o in _split_top(rest[start + 1 : end - 1])
    ]
    return Instruction(
        name=name,
        shape=shape,
        opcode=op.group(1),
        operands=operands,
        attributes=rest[end:].lstrip(", "),
        computation=computation,
        root=bool(root),
    )


# ---------------------------------------------------------------- replica groups


def replica_groups(text: str, num_devices: int | None = None) -> list[list[int]]:
    """Expand any spelling of `replica_groups=` into lists of device ids.

    `{}` (no groups) means one group of every device, so it needs `num_devices`.
    """
    text = text.strip()
    if text.startswith("mesh["):
        return _mesh_groups(text)
    if text.startswith("["):
        return _iota_groups(text)
    if text.startswith("{"):
        groups = [
            [int(n) for n in g.split(",") if n.strip()]
            for g in re.findall(r"\{([\d,\s]*)\}", text[1:-1])
        ]
        if groups:
            return groups
        if num_devices is None:
            raise HloParseError("replica_groups={} needs the number of devices")
        return [list(range(num_devices))]
    raise HloParseError(f"unknown replica_groups syntax: {text!r}")


_IOTA = re.compile(r"\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?")


def _iota(spec: str) -> np.ndarray:
    """`[2,4]<=[8]` or `[4,2]<=[2,4]T(1,0)`: iota(reshape).transpose(perm).reshape(dims)."""
    match = _IOTA.fullmatch(spec.strip())
    if not match:
        raise HloParseError(f"not an iota device list: {spec!r}")
    dims = [int(n) for n in match.group(1).split(",")]
    reshape = [int(n) for n in match.group(2).split(",")]
    ids = np.arange(math.prod(reshape)).reshape(reshape)
    if match.group(3):
        ids = ids.transpose([int(n) for n in match.group(3).split(",")])
    return ids.reshape(dims)


def _iota_groups(text: str) -> list[list[int]]:
    ids = _iota(text)
    if ids.ndim != 2:
        raise HloParseError(f"iota replica groups must be 2-D: {text!r}")
    return ids.tolist()


_MESH = re.compile(
    r"mesh\[(?P<axes>[^\]]*)\]"
    r"(?:,\s*device_ids=\((?P<ids>[^)]*(?:\([^)]*\))?[^)]*)\))?"
    r"\s*\{(?P<grouped>[^}]*)\}"
)


def _mesh_groups(text: str) -> list[list[int]]:
    """`mesh['x'=2,'y'=4] {'y'}`: the devices that differ only along the named axes.

    As XLA's MeshAxesReplicaGroupList: the mesh's device array is reshaped so that each
    named (sub-)axis is a dimension of its own, those dimensions are moved last in the
    order the group names them, and every run of `group size` ids is a group.
    `'x':(2)4` is the sub-axis of x of size 4 after (more minor than) a part of size 2.
    """
    match = _MESH.fullmatch(text.strip())
    if not match:
        raise HloParseError(f"not a mesh replica group: {text!r}")
    names, sizes = [], []
    for axis in _split_top(match.group("axes")):
        name, _, size = axis.rpartition("=")
        names.append(name.strip().strip("'\""))
        sizes.append(int(size))
    ids_text = (match.group("ids") or "").strip()
    if not ids_text:
        ids = np.arange(math.prod(sizes))
    elif "<=" in ids_text:
        ids = _iota(ids_text)
    else:
        ids = np.array([int(n) for n in ids_text.strip("[]").split(",")])
    refs = []  # (mesh axis, pre-size, size), in the order the group names them
    for ref in _split_top(match.group("grouped")):
        sub = re.fullmatch(r"['\"]?(.+?)['\"]?(?::\((\d+)\)(\d+))?", ref)
        if not sub or sub.group(1) not in names:
            raise HloParseError(f"unknown mesh axis {ref!r} in {text!r}")
        axis = names.index(sub.group(1))
        if sub.group(2):
            refs.append((axis, int(sub.group(2)), int(sub.group(3))))
        else:
            refs.append((axis, 1, sizes[axis]))
    # Each mesh axis becomes its named pieces, major to minor, padded to its full size.
    reshape, position = [], {}
    for axis, size in enumerate(sizes):
        done = 1
        for pre, n, i in sorted(
            (p, n, i) for i, (a, p, n) in enumerate(refs) if a == axis
        ):
            if pre != done:
                reshape.append(pre // done)
                done = pre
            position[i] = len(reshape)
            reshape.append(n)
            done *= n
        if done != size:
            reshape.append(size // done)
    grouped = [position[i] for i in range(len(refs))]
    rest = [d for d in range(len(reshape)) if d not in grouped]
    group_size = math.prod(reshape[d] for d in grouped)
    return (
        ids.reshape(reshape).transpose(rest + grouped).reshape(-1, group_size).tolist()
    )


# ---------------------------------------------------------------- collectives


@dataclass(frozen=True)
class Collective:
    """One collective of a compiled program, as it runs on one device."""

    kind: str  # one of KINDS
    name: str  # the instruction in the HLO text
    shapes: tuple[str, ...]  # result arrays, e.g. ("f32[4096,128]",)
    dtype: str  # element type(s) of the result, "," joined when mixed
    result_bytes: int  # bytes of the result, per device, per run
    full_bytes: int  # V of the ring model: the gathered / unscattered array, per device
    group_size: int | None  # devices per replica group (None: collective-permute)
    groups: tuple[tuple[int, ...], ...]  # replica groups, or (source, target) pairs
    replica_groups: str  # as printed
    computation: str  # the computation that runs it (ENTRY, a loop body, ...)
    trip_counts: tuple[int | None, ...]  # the loops around it, outermost first
    runs: int | None  # times per step: the product of trip_counts; None if unknown
    form: (
        str  # "sync", "async", "async-fusion", "all-reduce-scatter-fusion", "megascale"
    )
    # "dcn": between slices, through the megascale runtime's host transfers; None: among
    # the program's own devices
    network: str | None = None

    def as_record(self) -> dict:
        """What results.json stores (the groups as printed, not expanded)."""
        return {
            "kind": self.kind,
            "name": self.name,
            "shapes": list(self.shapes),
            "dtype": self.dtype,
            "result_bytes": self.result_bytes,
            "full_bytes": self.full_bytes,
            "group_size": self.group_size,
            "num_groups": len(self.groups),
            "replica_groups": self.replica_groups,
            "computation": self.computation,
            "trip_counts": list(self.trip_counts),
            "runs": self.runs,
            "form": self.form,
            "network": self.network,
            "wire_bytes": wire_bytes(self),
        }


@dataclass
class Program:
    module: Module
    collectives: list[Collective]
    # Collective instructions in the text that are the same collective as a counted one
    # (async chain pieces) or a part of one (the all-reduce inside all-reduce-scatter).
    folded: dict[str, str]

    def unaccounted(self) -> list[str]:
        """Collective instructions in the text that no record stands for (a reader bug):
        one of a kind the reader counts but missed, or of a kind it does not know (a
        `-done`, `-update` is the end of one whose start is counted)."""
        counted = {c.name for c in self.collectives} | set(self.folded)
        return [
            inst.name
            for comp in self.module.computations.values()
            for inst in comp.instructions.values()
            if inst.name not in counted
            and (
                inst.opcode in _KIND_OF
                or (
                    _COLLECTIVE_OPCODE.match(inst.opcode)
                    and not inst.opcode.endswith(("-done", "-update"))
                )
            )
        ]


def read(text: str, num_devices: int | None = None) -> Program:
    """Every collective of a compiled program, each counted once, with its run count."""
    module = parse(text)
    devices = num_devices or module.num_partitions
    callers = _callers(module)
    # Bodies of TPU reduce-scatters: their all-reduce is a part of the fusion that calls it.
    scatter_bodies = {
        inst.called("calls")[0]: inst
        for comp in module.computations.values()
        for inst in comp.instructions.values()
        if inst.opcode == "fusion" and _is_reduce_scatter_fusion(module, inst)
    }
    folded: dict[str, str] = {}
    found: list[Collective] = []
    chains: dict[tuple, str] = {}
    for comp in module.computations.values():
        for inst in comp.instructions.values():
            if any(fusion is inst for fusion in scatter_bodies.values()):
                inner = _inner_all_reduce(module, inst)
                record = _collective(
                    module, inst, "reduce-scatter", inner, devices, callers
                )
                chain = _chain_key(inner)
            elif inst.opcode in _KIND_OF:
                if comp.name in scatter_bodies:
                    folded[inst.name] = scatter_bodies[comp.name].name
                    continue
                record = _collective(
                    module, inst, _KIND_OF[inst.opcode], inst, devices, callers
                )
                chain = _chain_key(inst)
            else:
                continue
            if chain is not None:
                key = (record.computation, record.kind, *chain)
                if key in chains:
                    folded[inst.name] = chains[key]
                    continue
                chains[key] = inst.name
            found.append(record)
    found.extend(_megascale(module, callers))
    return Program(module=module, collectives=found, folded=folded)


# A multi-slice TPU program is compiled for one slice; what crosses the data-center
# network (DCN) between slices is a host-transfer `send` (with its `recv` and `-done`s)
# that the megascale runtime carries out as a collective over the slices.
_MEGASCALE_KIND = {
    "ALL_REDUCE": "all-reduce",
    "ALL_GATHER": "all-gather",
    "REDUCE_SCATTER": "reduce-scatter",
    "ALL_TO_ALL": "all-to-all",
}


def _megascale(module: Module, callers: dict) -> list[Collective]:
    """The DCN collectives of a multi-slice program: one per megascale `send`."""
    found = []
    for comp in module.computations.values():
        for inst in comp.instructions.values():
            if inst.opcode != "send":
                continue
            attrs = inst.attribute("frontend_attributes") or ""
            kind = re.search(r'_xla_megascale_transfer_type="(\w+)"', attrs)
            if not kind:
                continue
            if kind.group(1) not in _MEGASCALE_KIND:
                raise HloParseError(
                    f"{inst.name}: unknown megascale transfer {kind.group(1)!r}"
                )
            target = re.search(r'_xla_megascale_target="\{([\d,]+)\}x', attrs)
            if not target:
                raise HloParseError(f"{inst.name}: megascale send without its slices")
            slices = len(target.group(1).split(","))
            data = arrays(inst.shape)[0]  # (data, context, token)
            shape = f"{data[0]}[{','.join(map(str, data[1]))}]"
            result = nbytes(shape)
            kind_name = _MEGASCALE_KIND[kind.group(1)]
            full = result * slices if kind_name == "all-gather" else result
            place, trips = _place(module, inst.computation, callers)
            runs = math.prod(trips) if all(t is not None for t in trips) else None
            found.append(
                Collective(
                    kind=kind_name,
                    name=inst.name,
                    shapes=(shape,),
                    dtype=data[0],
                    result_bytes=result,
                    full_bytes=full,
                    group_size=slices,
                    groups=(),
                    replica_groups=f"{slices} slices",
                    computation=place,
                    trip_counts=tuple(trips),
                    runs=runs,
                    form="megascale",
                    network="dcn",
                )
            )
    return found


def _chain_key(inst: Instruction) -> tuple | None:
    """TPU prints an async collective in each fusion of its chain: one key for all."""
    if "async_collective_fusion_config" not in inst.attributes:
        return None
    chain = re.search(r'chain_id="?(\w+)', inst.attributes)
    return (inst.attribute("channel_id"), chain.group(1) if chain else None)


def _is_reduce_scatter_body(comp: Computation) -> bool:
    """A body that all-reduces and keeps a dynamic slice: TPU's reduce-scatter."""
    root = comp.root
    while root is not None and root.opcode in ("bitcast", "copy", "reshape"):
        root = comp.instructions.get(root.operands[0])
    if root is None or root.opcode != "dynamic-slice":
        return False
    source = comp.instructions.get(root.operands[0])
    while source is not None and source.opcode in ("bitcast", "copy", "reshape"):
        source = comp.instructions.get(source.operands[0])
    return source is not None and source.opcode in ("all-reduce", "all-reduce-start")


def _is_reduce_scatter_fusion(module: Module, inst: Instruction) -> bool:
    called = inst.called("calls")
    return (
        len(called) == 1
        and "kind=kCustom" in inst.attributes
        and called[0] in module.computations
        and _is_reduce_scatter_body(module.computations[called[0]])
    )


def _inner_all_reduce(module: Module, fusion: Instruction) -> Instruction:
    body = module.computations[fusion.called("calls")[0]]
    found = [
        i
        for i in body.instructions.values()
        if i.opcode in ("all-reduce", "all-reduce-start")
    ]
    if len(found) != 1:
        raise HloParseError(f"{fusion.name}: expected one all-reduce in its body")
    return found[0]


def _operand_shape(module: Module, inst: Instruction, index: int) -> str:
    comp = module.computations[inst.computation]
    name = inst.operands[index] if index < len(inst.operands) else None
    if name not in comp.instructions:
        raise HloParseError(f"{inst.name}: cannot find its operand {index} ({name})")
    return comp.instructions[name].shape


def _result_shape(module: Module, inst: Instruction) -> str:
    """The shape a collective delivers: an async start's is read off its done."""
    if not inst.opcode.endswith("-start"):
        return inst.shape
    comp = module.computations[inst.computation]
    done = inst.opcode.replace("-start", "-done")
    for other in comp.instructions.values():
        if other.opcode == done and other.operands[:1] == [inst.name]:
            return other.shape
    if inst.opcode == "all-reduce-start":
        return inst.shape
    # (operand(s), result(s), context...): the result is the second element.
    parts = _split_top(inst.shape[1:-1])
    if len(parts) >= 2:
        return parts[1]
    raise HloParseError(f"{inst.name}: cannot tell the result of {inst.shape}")


def _collective(
    module: Module,
    inst: Instruction,
    kind: str,
    grouped: Instruction,
    devices: int | None,
    callers: dict,
) -> Collective:
    """`inst` gives the result and place, `grouped` the replica groups."""
    shape = _result_shape(module, inst)
    found = arrays(shape)
    shapes = tuple(f"{d}[{','.join(map(str, dims))}]" for d, dims in found)
    dtype = ",".join(dict.fromkeys(d for d, _ in found))
    result = nbytes(shape)
    if kind == "collective-permute":
        text = grouped.attribute("source_target_pairs") or "{}"
        groups = tuple(tuple(g) for g in replica_groups(text, devices))
        group_size = None
    else:
        text = grouped.attribute("replica_groups") or "{}"
        groups = tuple(tuple(g) for g in replica_groups(text, devices))
        sizes = {len(g) for g in groups}
        if len(sizes) != 1:
            raise HloParseError(f"{inst.name}: replica groups of unequal sizes")
        group_size = sizes.pop()
    if kind == "reduce-scatter":
        full = nbytes(grouped.shape) if grouped is not inst else result * group_size
    elif kind == "ragged-all-to-all":
        # the result is the receiving buffer, sized for the worst case; what a device
        # sends is at most its input (the first operand)
        full = nbytes(_operand_shape(module, grouped, 0))
    else:
        full = result
    place, trips = _place(module, inst.computation, callers)
    runs = math.prod(trips) if None not in trips else None
    if inst is not grouped:
        form = "all-reduce-scatter-fusion"
    elif _chain_key(inst) is not None:
        form = "async-fusion"
    elif inst.opcode.endswith("-start") or _wrapped_by_async(module, inst, callers):
        form = "async"
    else:
        form = "sync"
    return Collective(
        kind=kind,
        name=inst.name,
        shapes=shapes,
        dtype=dtype,
        result_bytes=result,
        full_bytes=full,
        group_size=group_size,
        groups=groups,
        replica_groups=text,
        computation=place,
        trip_counts=tuple(trips),
        runs=runs,
        form=form,
    )


# ---------------------------------------------------------------- loops and calls

# Edges along which a computation runs as part of its caller. `async-update` and
# `async-done` name the same wrapped computation as `async-start`: counted once.
_EDGES = {
    "fusion": ("calls",),
    "async-start": ("calls",),
    "call": ("to_apply",),
    "while": ("body", "condition"),
    "conditional": ("branch_computations", "true_computation", "false_computation"),
    "custom-call": ("called_computations",),
}


def _callers(module: Module) -> dict[str, list[tuple[Instruction, str]]]:
    found: dict[str, list[tuple[Instruction, str]]] = {}
    for comp in module.computations.values():
        for inst in comp.instructions.values():
            for key in _EDGES.get(inst.opcode, ()):
                for name in inst.called(key):
                    found.setdefault(name, []).append((inst, key))
    return found


def _wrapped_by_async(module: Module, inst: Instruction, callers: dict) -> bool:
    return any(c.opcode == "async-start" for c, _ in callers.get(inst.computation, []))


def _place(module: Module, name: str, callers: dict) -> tuple[str, list[int | None]]:
    """The computation that runs `name` (skipping fusions) and the loops around it.

    A trip count is None where it cannot be known from the text: a loop whose counter
    cannot be read, a branch of a conditional (it runs once or not at all), or a
    computation that nothing reachable calls.
    """
    trips: list[int | None] = []
    place = None
    seen = set()
    while name != module.entry:
        if name in seen:
            raise HloParseError(f"computation {name} calls itself")
        seen.add(name)
        sites = callers.get(name, [])
        if not sites:
            trips.append(None)
            break
        if len(sites) > 1:  # compiled modules give each computation one caller
            raise HloParseError(f"{name} has {len(sites)} callers")
        caller, key = sites[0]
        if caller.opcode in ("while", "conditional", "call") and place is None:
            place = name
        if caller.opcode == "while":
            n = trip_count(module, caller)
            trips.append(None if n is None else (n + 1 if key == "condition" else n))
        elif caller.opcode == "conditional":
            trips.append(None)
        name = caller.computation
    return place or name, trips[::-1]


def trip_count(module: Module, loop: Instruction) -> int | None:
    """How many times a `while` runs its body, or None if the text does not say.

    XLA writes `known_trip_count` into the while's backend_config on CPU and GPU; the
    TPU compiler does not, so there the loop's counter is read: the condition compares a
    tuple element against a constant, the body adds a constant to it, and the while's
    operand starts it at a constant.
    """
    known = re.search(r'"known_trip_count":\{"n":"(\d+)"\}', loop.attributes)
    if known:
        return int(known.group(1))
    try:
        return _counted_loop(module, loop)
    except (KeyError, IndexError, ValueError):
        return None


def _counted_loop(module: Module, loop: Instruction) -> int | None:
    cond = module.computations[loop.called("condition")[0]]
    body = module.computations[loop.called("body")[0]]
    caller = module.computations[loop.computation]
    compare = _through_fusion(module, cond, cond.root)
    if compare is None:
        return None
    comp, inst, args = compare
    if inst.opcode != "compare":
        return None
    direction = re.search(r"direction=(\w+)", inst.attributes).group(1)
    left, right = (_value(module, comp, o, args) for o in inst.operands[:2])
    if _is_element(right) and isinstance(left, int):
        left, right = right, left
        direction = {"LT": "GT", "GT": "LT", "LE": "GE", "GE": "LE"}.get(direction)
    if not (_is_element(left) and isinstance(right, int)):
        return None
    index = left[1]
    start = _value(module, caller, loop.operands[0], {}, element=index)
    step = _step(module, body, index)
    if not isinstance(start, int) or not step:
        return None
    limit = right
    if direction == "LT" and step > 0:
        return max(0, -((start - limit) // step))
    if direction == "LE" and step > 0:
        return max(0, (limit - start) // step + 1)
    if direction == "GT" and step < 0:
        return max(0, -((limit - start) // -step))
    if direction == "GE" and step < 0:
        return max(0, (start - limit) // -step + 1)
    return None


_TRANSPARENT = ("copy", "bitcast", "convert", "reshape")


def _through_fusion(module: Module, comp: Computation, inst: Instruction):
    """(computation, instruction, {parameter number: caller's value}) past fusions."""
    args: dict[int, object] = {}
    while inst is not None and inst.opcode == "fusion":
        inner = module.computations[inst.called("calls")[0]]
        args = {i: _value(module, comp, o, args) for i, o in enumerate(inst.operands)}
        comp, inst = inner, inner.root
    return (comp, inst, args) if inst is not None else None


_LOOP_TUPLE = ("tuple", None)  # the loop's own parameter, inside its body or condition


def _is_element(value) -> bool:
    return isinstance(value, tuple) and value[0] == "element"


def _value(module, comp, name, args, element=None):
    """A constant int, ("element", k) for element k of the loop tuple, or None.

    `args` gives the values of a fused computation's parameters; `element` reads one
    element of a tuple instruction (the while's operand, for the counter's start).
    """
    inst = comp.instructions[name]
    while inst.opcode in _TRANSPARENT:
        inst = comp.instructions[inst.operands[0]]
    if inst.opcode == "constant":
        return int(float(inst.operands[0]))
    if inst.opcode == "parameter":
        number = int(inst.operands[0])
        if number in args:
            return args[number]
        return _LOOP_TUPLE if element is None else None
    if inst.opcode == "get-tuple-element":
        index = int(inst.attribute("index"))
        source = _value(module, comp, inst.operands[0], args)
        if source == _LOOP_TUPLE:
            return ("element", index)
        return None
    if inst.opcode == "tuple" and element is not None:
        return _value(module, comp, inst.operands[element], args)
    return None


def _step(module: Module, body: Computation, index: int) -> int | None:
    """The constant the body adds to loop element `index`."""
    root = body.root
    if root is None or root.opcode != "tuple":
        return None
    found = _through_fusion(module, body, body.instructions[root.operands[index]])
    if found is None:
        return None
    comp, inst, args = found
    while inst.opcode in _TRANSPARENT:
        inst = comp.instructions[inst.operands[0]]
    if inst.opcode not in ("add", "subtract"):
        return None
    a, b = (_value(module, comp, o, args) for o in inst.operands[:2])
    sign = 1 if inst.opcode == "add" else -1
    if a == ("element", index) and isinstance(b, int):
        return sign * b
    if b == ("element", index) and isinstance(a, int) and sign == 1:
        return a
    return None


# ---------------------------------------------------------------- costs


def wire_bytes(c: Collective | dict) -> float:
    """Bytes one device sends for one run of `c`, by the ring model.

    V is the full array (gathered, or before scattering): all-gather and reduce-scatter
    move (N-1)/N * V, all-reduce 2(N-1)/N * V, all-to-all (N-1)/N of the local block, and
    a collective-permute the block. A ragged all-to-all sends what the running program's
    sizes say, at most its whole input: counted as (N-1)/N of that input, what leaves a
    device when its rows spread evenly over the group.
    """
    get = c.get if isinstance(c, dict) else lambda k: getattr(c, k)
    kind, n, full = get("kind"), get("group_size"), get("full_bytes")
    if kind == "collective-permute":
        return float(get("result_bytes"))
    if kind in ("all-gather", "reduce-scatter", "all-to-all", "ragged-all-to-all"):
        return (n - 1) * full / n
    if kind == "all-reduce":
        return 2 * (n - 1) * full / n
    raise ValueError(f"unknown collective kind {kind!r}")


def summarize(collectives: Iterable[Collective | dict]) -> dict[str, dict]:
    """Per kind: instructions, runs per step, result and wire bytes per device per step.

    Collectives whose run count is unknown are left out of `runs` and the byte totals and
    counted in `unknown_runs`, so that a total is never a guess.
    """
    out: dict[str, dict] = {}
    for c in collectives:
        get = c.get if isinstance(c, dict) else lambda k, c=c: getattr(c, k)
        kind, runs = get("kind"), get("runs")
        row = out.setdefault(
            kind,
            {
                "count": 0,
                "runs": 0,
                "result_bytes": 0,
                "wire_bytes": 0.0,
                "unknown_runs": 0,
            },
        )
        row["count"] += 1
        if runs is None:
            row["unknown_runs"] += 1
            continue
        row["runs"] += runs
        row["result_bytes"] += runs * get("result_bytes")
        row["wire_bytes"] += runs * wire_bytes(c)
    return {k: out[k] for k in KINDS if k in out}


# ---------------------------------------------------------------- what runs during a collective

_MATMULS = ("dot", "convolution")
_SCHEDULED = re.compile(r"^HloModule\s+\S+,.*\bis_scheduled=true\b", re.M)


@dataclass(frozen=True)
class InFlight:
    """An asynchronous collective and the matmuls scheduled while it is in flight."""

    kind: str  # one of KINDS
    start: str  # its `-start` instruction
    done: str  # its `-done` instruction
    computation: str
    matmuls: int  # instructions between start and done that multiply matrices


def in_flight(text: str) -> list[InFlight]:
    """Each `*-start` / `*-done` pair of a scheduled program, with the matmuls between them.

    A scheduled module (`is_scheduled=true`, what `compiled.as_text()` prints) lists each
    computation's instructions in the order they run, so what sits between a collective's
    start and its done is the work the device can do while the data travels. A matmul is a
    `dot` or `convolution`, or a fusion whose computation holds one. A program with only
    synchronous collectives has no pairs: nothing runs beside them.
    """
    if not _SCHEDULED.search(text):
        raise HloParseError(
            "the program is not scheduled (no `is_scheduled=true`): read the text of a "
            "compiled program, `compiled.as_text()`, not of a lowered one"
        )
    module = parse(text)
    found = []
    for comp in module.computations.values():
        order = list(comp.instructions.values())
        for i, inst in enumerate(order):
            if not inst.opcode.endswith("-start") or inst.opcode[:-6] not in KINDS:
                continue
            done = next(
                (
                    j
                    for j in range(i + 1, len(order))
                    if order[j].opcode == inst.opcode[:-6] + "-done"
                    and inst.name in order[j].operands
                ),
                None,
            )
            if done is None:
                raise HloParseError(f"{inst.name} has no -done in {comp.name}")
            found.append(
                InFlight(
                    kind=inst.opcode[:-6],
                    start=inst.name,
                    done=order[done].name,
                    computation=comp.name,
                    matmuls=sum(
                        _multiplies(module, x, set()) for x in order[i + 1 : done]
                    ),
                )
            )
    return found


def _multiplies(module: Module, inst: Instruction, seen: set[str]) -> bool:
    if inst.opcode in _MATMULS:
        return True
    for name in inst.called("calls"):
        comp = module.computations.get(name)
        if comp is None or name in seen:
            continue
        seen.add(name)
        if any(_multiplies(module, i, seen) for i in comp.instructions.values()):
            return True
    return False
