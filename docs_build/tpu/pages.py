"""The TPU-compiled evidence on the pages: tables and numbers filled in from results.json.

A page writes a marker where generated evidence goes:

- `<!-- tpu-costs -->`: every strategy on every target, MiB sent per device per step and the
  collectives; `<!-- tpu-costs: cpu v5e:2x4 -->` the same for the targets named.
- `<!-- tpu-compare: STRATEGY -->`: one strategy on every target, with its memory per device
  (the training pages; `STRATEGY | STRATEGY` for two).
- `<!-- tpu-model -->`: the cost model's formulas beside the compiled figures.
- `<!-- tpu-hybrid -->`: programs over several slices, bytes within and between slices.
- `<!-- tpu-approaches -->`: the three approaches page's layer on each 8-device target.
- `<!-- tpu-programs: NAME | NAME -->`: programs of the "Beyond the basics" pages
  (docs_build/tpu/advanced.py) on each 8-device target: collectives, bytes sent, and the
  matmuls scheduled while each asynchronous collective is in flight.
- `<!-- tpu-work: NAME | NAME -->`: the same programs' floating-point operations per device,
  with their collectives and bytes sent.
- `<!-- tpu-memory: NAME | NAME -->`: the same programs' memory per device: the state by the
  page's formula against the compiled program's, its temporaries and its peak.
- `<!-- tpu-plot -->`: the scaling plot, 8 to 256 chips (docs_build/tpu/plot.py).
- `<!-- tpu-model: params -->`: the compiled MLP's parameters, in MiB.
- `<!-- tpu: TARGET / STRATEGY / FIELD -->`: one number in prose, in MiB per device: `wire`
  (sent per step), `state` (the step's arguments), `temp` (its temporary buffers), `peak`,
  or for a program over several slices `ici` and `dcn` (sent within and between slices).

All are read from the same committed results (`nox -s tpu` regenerates them), so a number in
the prose is the number in a table, and tests check the claims each page makes about them.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

from docs_build import costmodel as cm
from docs_build.tpu.driver import RESULTS, TARGETS

TABLE = "<!-- tpu-costs -->"
TABLES = re.compile(r"<!-- tpu-costs(?:: ([^>]+?))? -->")
COMPARE = re.compile(r"<!-- tpu-compare: ([^>]+?) -->")
NUMBER = re.compile(
    r"<!-- tpu: ([^/]+?) / ([^/]+?) / (wire|state|temp|peak|ici|dcn|ici-ms|dcn-ms) -->"
)
HYBRID_TABLE = "<!-- tpu-hybrid -->"
APPROACHES_TABLE = "<!-- tpu-approaches -->"
PROGRAMS_TABLE = re.compile(r"<!-- tpu-programs: ([^>]+?) -->")
WORK_TABLE = re.compile(r"<!-- tpu-work: ([^>]+?) -->")
MEMORY_TABLE = re.compile(r"<!-- tpu-memory: ([^>]+?) -->")
MEMORY = {"state": "argument_bytes", "temp": "temp_bytes", "peak": "peak_bytes"}
MODEL_NUMBER = re.compile(r"<!-- tpu-model: params -->")
# The page's strategies, in the order the pages teach them.
STRATEGIES = ("data parallel", "FSDP", "tensor parallel", "2-D", "pipeline")
# A table that sets the pipeline beside the training steps says what its step is.
ROW_LABEL = {"pipeline": "pipeline (forward pass only)"}
MIB = 2**20


class TpuPagesError(ValueError):
    """A page asks for a target or strategy that the results do not hold."""


@cache
def results(path: Path = RESULTS) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def program(target: str, strategy: str, data: dict | None = None) -> dict:
    data = data or results()
    for p in data["programs"] + data.get("hybrid", {}).get("programs", []):
        if p["target"] == target and p["strategy"] == strategy:
            return p
    raise TpuPagesError(
        f"no compiled program for target {target!r} and strategy {strategy!r} in "
        f"{RESULTS.name}: run `nox -s tpu`, or use one of {list(TARGETS)}."
    )


def wire_mib(p: dict) -> float:
    """MiB each device sends per step, by the ring model, over every collective."""
    return sum(s["wire_bytes"] for s in p["summary"].values()) / MIB


def network_mib(p: dict, network: str) -> float:
    """MiB each device sends per step over one network of a multi-slice program."""
    return (
        sum(
            c["wire_bytes"] * c["runs"]
            for c in p["collectives"]
            if c["network"] == network
        )
        / MIB
    )


def collectives(p: dict) -> str:
    """`4 all-gather, 1 all-reduce`, with runs per step where a loop repeats one."""
    parts = []
    for kind, s in sorted(p["summary"].items()):
        runs = f" \u00d7{s['runs'] // s['count']}" if s["runs"] != s["count"] else ""
        parts.append(f"{s['count']} {kind}{runs}")
    return ", ".join(parts) or "none"


def mib(p: dict, field: str) -> float:
    """A program's `field` (wire, state, temp, peak; ici or dcn: sent within a slice or
    between slices), in MiB per device."""
    if field == "wire":
        return wire_mib(p)
    if field in ("ici", "dcn"):
        return network_mib(p, field)
    return p["memory"][MEMORY[field]] / MIB


def floor_ms(p: dict, network: str) -> float:
    """The least time a v5e chip needs to send its `network` bytes, in milliseconds."""
    per_second = getattr(cm.V5E, network)
    return cm.seconds(network_mib(p, network) * MIB, per_second) * 1e3


def number(target: str, strategy: str, field: str = "wire") -> str:
    p = program(target.strip(), strategy.strip())
    if field.endswith("-ms"):
        return f"{floor_ms(p, field.removesuffix('-ms')):.2f} ms"
    return f"{mib(p, field):.1f} MiB"


def _targets(data: dict, named: str | None) -> list[str]:
    if not named:
        return list(data["targets"])
    targets = named.split()
    for t in targets:
        if t not in data["targets"]:
            raise TpuPagesError(
                f"no compiled programs for target {t!r} in {RESULTS.name}: use some of "
                f"{list(data['targets'])}, or add it to the targets of `nox -s tpu`."
            )
    return targets


def _where(data: dict) -> str:
    v = data["versions"]
    return (
        f"Compiled ahead of time by JAX {v['jax']} for the CPU backend (the program this "
        f"site's 8 virtual devices run) and, with libtpu {v['libtpu']}, for each TPU "
        "topology; nothing ran on a TPU."
    )


def _model(data: dict, strategies=STRATEGIES) -> str:
    m = data["model"]
    said = []
    if any(s != "pipeline" for s in strategies):
        said.append(
            f"One training step of the MLP (width {m['d']}, hidden {m['hidden']}, "
            f"batch {m['batch']}, {m['dtype']}, Adam), per device"
        )
    if "pipeline" in strategies:
        said.append(
            ("The pipeline" if said else "The pipeline page's step")
            + f": its GPipe forward pass, one such MLP per stage, the batch in "
            f"{m['pipeline_microbatches']} microbatches"
        )
    return "; ".join(said)


def _boxed(lines: list[str], caption: str) -> str:
    """A generated table and its caption, kept out of the search index (the prose names
    what it shows)."""
    rows = "\n".join(lines)
    return (
        f'<div class="tpu-costs" data-search-exclude markdown>\n\n{rows}\n\n'
        f"<small>{caption}</small>\n\n</div>\n"
    )


def table(data: dict | None = None, named: str | None = None) -> str:
    data = data or results()
    targets = _targets(data, named)
    head = "| strategy | " + " | ".join(
        f"{t}<br>{data['targets'][t]['devices']} devices" for t in targets
    )
    lines = [head + " |", "|---|" + "---|" * len(targets)]
    for strategy in STRATEGIES:
        cells = []
        for t in targets:
            p = program(t, strategy, data)
            cells.append(f"**{wire_mib(p):.1f}** MiB: {collectives(p)}")
        lines.append(
            f"| {ROW_LABEL.get(strategy, strategy)} | " + " | ".join(cells) + " |"
        )
    caption = (
        f"{_model(data)}. **Bold**: MiB sent "
        "per device per step, by the ring model, over every collective the compiled program "
        "runs (a collective in a loop counted once per trip), read from the compiled "
        "program by the site's HLO reader, then the collectives. Meshes over N devices: "
        f"data N; model N; 2-D data N/4 \u00d7 model 4; pipeline stage N. {_where(data)}"
    )
    # Data, out of the search index like every generated output: the prose names it.
    return _boxed(lines, caption)


def compare_table(named: str, data: dict | None = None) -> str:
    """One strategy (or `A | B`) on every target: collectives, bytes sent, memory."""
    data = data or results()
    strategies = [s.strip() for s in named.split("|")]
    several = len(strategies) > 1
    head = "| strategy " if several else ""
    lines = [
        head
        + "| target | collectives per step | sent per device | state | temporaries "
        "| peak |",
        ("|---" if several else "") + "|---|---|---:|---:|---:|---:|",
    ]
    for strategy in strategies:
        for target in data["targets"]:
            p = program(target, strategy, data)
            n = data["targets"][target]["devices"]
            mesh = " \u00d7 ".join(f"{k} {v}" for k, v in p["mesh"].items())
            # CPU's peak reads below its own temporaries (tests/docs_build/test_tpu_pages.py
            # keeps that true): no figure is better than a wrong one.
            peak = "not reported" if target == "cpu" else f"{mib(p, 'peak'):.1f} MiB"
            cells = [
                f"{target}, {n} devices<br>{mesh}",
                collectives(p),
                f"**{wire_mib(p):.1f} MiB**",
                f"{mib(p, 'state'):.1f} MiB",
                f"{mib(p, 'temp'):.1f} MiB",
                peak,
            ]
            lead = f"| {strategy} " if several else ""
            lines.append(lead + "| " + " | ".join(cells) + " |")
    held = (
        "a stage's parameters, the microbatches"
        if strategies == ["pipeline"]
        else "parameters, Adam's moments, the batch"
    )
    caption = (
        f"{_model(data, strategies)}. Sent: MiB per step by the ring model, over every "
        "collective of the compiled program (docs_build/hlo.py). State: the step's "
        f"arguments ({held}); temporaries and peak: the compiler's "
        "memory_analysis(). The CPU backend's peak figure reads below its own temporaries, "
        f"so it is not shown. {_where(data)}"
    )
    return _boxed(lines, caption)


def hybrid_table(data: dict | None = None) -> str:
    """Programs over several slices: what each device sends within its slice and between."""
    data = data or results()
    m = data["model"]
    model = cm.MLP(m["d"], m["hidden"], m["batch"])
    hybrid = data["hybrid"]
    lines = [
        "| strategy | target | mesh | within a slice (ICI) | between slices (DCN) "
        "| DCN, formula | sending takes at least: ICI / DCN |",
        "|---|---|---|---|---|---:|---:|",
    ]
    for p in hybrid["programs"]:
        cells = []
        for network in ("ici", "dcn"):
            counts: dict[tuple[str, int], int] = {}
            for c in p["collectives"]:
                if c["network"] == network:
                    key = (c["kind"], c["group_size"])
                    counts[key] = counts.get(key, 0) + c["runs"]
            unit = "chips" if network == "ici" else "slices"
            said = ", ".join(
                f"{n} {kind} over {g} {unit}" for (kind, g), n in counts.items()
            )
            cells.append(f"**{network_mib(p, network):.1f} MiB**: {said}")
        mesh = " \u00d7 ".join(f"{k} {v}" for k, v in p["mesh"].items())
        formula = cm.dcn_bytes(p["mesh"], model) / MIB
        lines.append(
            f"| {p['strategy']} | {p['target']} | {mesh} | {cells[0]} | {cells[1]} "
            f"| {formula:.1f} MiB | {floor_ms(p, 'ici'):.2f} / {floor_ms(p, 'dcn'):.2f} ms |"
        )
    v = data["versions"]
    caption = (
        f"{_model(data, ['FSDP'])}, over several TPU slices: the batch split over both mesh "
        'axes; FSDP splits the weights over each slice\'s chips ("data") and keeps a copy per '
        "slice. Bold: MiB sent per device per step by the ring model. libtpu compiles one "
        "slice's program; what crosses between slices is a megascale host transfer, read as "
        "a collective over the slices. DCN formula: 2(S \u2212 1)/S \u00b7 P/n for S slices "
        f"of n chips (docs_build/costmodel.py). Times: the bytes over what one v5e chip can "
        f"send, {cm.V5E.ici / 1e9:.0f} GB/s over ICI and {cm.V5E.dcn / 1e9:.3g} GB/s over "
        f"DCN, from {cm.V5E.source}; a floor, not a measurement. Compiled by JAX "
        f"{v['jax']} with libtpu {v['libtpu']}; nothing ran on a TPU."
    )
    return _boxed(lines, caption)


def approaches_table(data: dict | None = None) -> str:
    """The three approaches page's layer, each way of writing it, on each 8-device target."""
    data = data or results()
    group = data["approaches"]
    targets = group["targets"]
    by = {(p["target"], p["strategy"]): p for p in group["programs"]}
    lines = [
        "| written | " + " | ".join(targets) + " |",
        "|---|" + "---|" * len(targets),
    ]
    for approach in dict.fromkeys(p["strategy"] for p in group["programs"]):
        cells = []
        for t in targets:
            p = by[t, approach]
            said = "; ".join(
                f"{c['kind']} of {', '.join(c['shapes'])} over {c['group_size']} devices, "
                f"{c['result_bytes']} B, {c['wire_bytes']:g} B sent"
                for c in p["collectives"]
            )
            cells.append(said or "none")
        lines.append(f"| {approach} | " + " | ".join(cells) + " |")
    v = data["versions"]
    caption = (
        "The layer of this page (x of 32, W of 32 \u00d7 4, x and W's rows split over 8 "
        "devices), compiled as written above, per device: each collective, the bytes of its "
        "result and the bytes each device sends by the ring model. Compiled ahead of time by "
        f"JAX {v['jax']} for the CPU backend and, with libtpu {v['libtpu']}, for each TPU "
        "topology; nothing ran on a TPU."
    )
    return _boxed(lines, caption)


def advanced_program(target: str, name: str, data: dict | None = None) -> dict:
    data = data or results()
    for p in data["advanced"]["programs"]:
        if p["target"] == target and p["strategy"] == name:
            return p
    raise TpuPagesError(
        f"no compiled program {name!r} for {target!r} in {RESULTS.name}: add it to "
        "docs_build/tpu/advanced.py and run `nox -s tpu`."
    )


def _kinds(p: dict) -> str:
    """`7 collective-permute (async), 1 all-gather`: each kind, and how it runs."""
    parts = []
    for kind, s in p["summary"].items():
        mine = [c for c in p["collectives"] if c["kind"] == kind]
        how = (
            "async" if {c["form"] for c in mine} & {"async", "async-fusion"} else "sync"
        )
        dtypes = "/".join(sorted({c["dtype"] for c in mine}))
        runs = f" \u00d7{s['runs'] // s['count']}" if s["runs"] != s["count"] else ""
        parts.append(f"{s['count']} {kind}{runs}, {dtypes}, {how}")
    return "; ".join(parts) or "none"


def _overlap(p: dict) -> str:
    if not p["in_flight"]:
        return "no asynchronous collective"
    counts = [f["matmuls"] for f in p["in_flight"]]
    return f"{sum(1 for c in counts if c)} of {len(counts)}: " + ", ".join(
        str(c) for c in counts
    )


def _size(nbytes: float) -> str:
    """Bytes in MiB, or in KiB below one MiB (a decode step sends kilobytes)."""
    if nbytes and nbytes < MIB:
        return f"{nbytes / 2**10:.1f} KiB"
    return f"{nbytes / MIB:.1f} MiB"


def programs_table(names: str, data: dict | None = None) -> str:
    """Programs of the advanced pages, each on each target of their group."""
    data = data or results()
    group = data["advanced"]
    wanted = [n.strip() for n in names.split("|")]
    lines = [
        "| program | target | collectives | sent per device | "
        "matmuls during each async collective |",
        "|---|---|---|---|---|",
    ]
    for name in wanted:
        for target in group["targets"]:
            p = advanced_program(target, name, data)
            lines.append(
                f"| {name} | {target} | {_kinds(p)} | {_size(wire_mib(p) * MIB)} | "
                f"{_overlap(p)} |"
            )
    caption = (
        "Per device, per call. Sent: by the ring model, over every collective. The last "
        "column lists, for each asynchronous collective in the order the compiled program "
        "starts them, how many matrix multiplications the compiler scheduled between its "
        "start and its done (work the chip can do while the data travels; "
        f"docs_build/hlo.py's `in_flight`). {_where(data)} Sizes: "
        "docs_build/tpu/advanced.py."
    )
    return _boxed(lines, caption)


def _advanced_rows(names: str, data: dict, row) -> list[str]:
    """One table row per program named (`A | B`) per target of the advanced group."""
    lines = []
    for name in (n.strip() for n in names.split("|")):
        for target in data["advanced"]["targets"]:
            cells = row(advanced_program(target, name, data))
            lines.append(f"| {name} | {target} | " + " | ".join(cells) + " |")
    return lines


def work_table(names: str, data: dict | None = None) -> str:
    """Floating-point operations per device, and what the program sends to do them."""
    data = data or results()
    lines = [
        "| program | target | flops per device | collectives | sent per device |",
        "|---|---|---|---|---|",
        *_advanced_rows(
            names,
            data,
            lambda p: (
                f"{p['cost']['flops']:,.0f}",
                _kinds(p),
                _size(wire_mib(p) * MIB),
            ),
        ),
    ]
    caption = (
        "Per device, per call. Flops: the compiled program's cost_analysis(). Sent: by the "
        f"ring model, over every collective. {_where(data)} Sizes: "
        "docs_build/tpu/advanced.py."
    )
    return _boxed(lines, caption)


def state_gap(p: dict) -> int:
    """Bytes of state the compiled program holds beyond the page's formula: what it
    aliases to its donated state, less the formula."""
    return p["memory"]["alias_bytes"] - p["extra"]["state_formula_bytes"]


def memory_table(names: str, data: dict | None = None) -> str:
    """The state by formula against the compiled program's, and what else it allocates."""
    data = data or results()
    lines = [
        "| program | target | state<br>formula / compiled | temporaries | peak |",
        "|---|---|---|---|---|",
        *_advanced_rows(
            names,
            data,
            lambda p: (
                f"{p['extra']['state_formula_bytes'] / MIB:,.1f} / "
                f"{p['memory']['alias_bytes'] / MIB:,.1f} MiB",
                f"{p['memory']['temp_bytes'] / MIB:,.1f} MiB",
                f"{p['memory']['peak_bytes'] / MIB:,.1f} MiB",
            ),
        ),
    ]
    wanted = {n.strip() for n in names.split("|")}
    gaps: dict[int, set[str]] = {}
    for p in data["advanced"]["programs"]:
        if p["strategy"] in wanted:
            gaps.setdefault(state_gap(p), set()).add(p["target"])
    said = "; ".join(
        f"{gap:,} B on {', '.join(sorted(targets))}"
        for gap, targets in sorted(gaps.items())
    )
    caption = (
        "Per device, from the compiled program's memory_analysis(). State: the formula above "
        "against the bytes the program writes back into its donated state (compiled less "
        f"formula: {said}). Temporaries: every other buffer the program allocates. Peak: the "
        f"backend's own peak_memory_in_bytes. {_where(data)} Sizes: "
        "docs_build/tpu/advanced.py."
    )
    return _boxed(lines, caption)


MODEL_TABLE = "<!-- tpu-model -->"


def model_table(data: dict | None = None) -> str:
    """Formula against compiled program, per strategy and target: state and wire bytes."""
    data = data or results()
    m = data["model"]
    model = cm.MLP(m["d"], m["hidden"], m["batch"], m["pipeline_microbatches"])
    lines = [
        "| strategy | target | state per device<br>formula / compiled | "
        "temporaries<br>formula / compiled | "
        "sent per device per step<br>formula / compiled | the compiler's plan |",
        "|---|---|---|---|---|---|",
    ]
    for strategy in STRATEGIES:
        for target in data["targets"]:
            p = program(target, strategy, data)
            plan = cm.plan_of(p)
            if strategy == "pipeline":
                state = "not modelled"
            else:
                state = (
                    f"{cm.state_bytes(strategy, p['mesh'], model) / MIB:.1f} / "
                    f"{p['memory']['argument_bytes'] / MIB:.1f} MiB"
                )
            wire = (
                f"{cm.wire_bytes(strategy, p['mesh'], model, plan) / MIB:.1f} / "
                f"{wire_mib(p):.1f} MiB"
            )
            said = plan.describe(strategy)
            said = f"**{said}**" if plan.departs(strategy) else said
            backend = "cpu" if target == "cpu" else "tpu"
            formula = cm.transient_bytes(strategy, p["mesh"], model, backend)
            temp = (
                f"{'\u2014' if formula is None else f'{formula / MIB:.1f}'} / "
                f"{p['memory']['temp_bytes'] / MIB:.1f} MiB"
            )
            label = ROW_LABEL.get(strategy, strategy)
            lines.append(f"| {label} | {target} | {state} | {temp} | {wire} | {said} |")
    caption = (
        "The cost model (docs_build/costmodel.py) against the compiled programs of the table "
        "above. State: parameters, Adam's two moments and the device's share of the batch, "
        "against memory_analysis()'s argument bytes. Temporaries: memory_analysis()'s "
        "temporary buffers, against a formula where one holds (\u2014: none does). Sent: the ring model under the plan the "
        "compiler chose, against the HLO reader. **Bold**: a plan other than the one the "
        "training pages teach (weights gathered in f32, gradients reduce-scattered; f32 "
        f"activations between stages). Every formula is within {cm.TOLERANCE:.1%} of its "
        "compiled figure (tests/docs_build/test_costmodel.py)."
    )
    return _boxed(lines, caption)


def fill(markdown: str) -> str:
    """The page with its TPU tables and numbers filled in."""
    markdown = TABLES.sub(lambda m: table(named=m.group(1)), markdown)
    markdown = COMPARE.sub(lambda m: compare_table(m.group(1)), markdown)
    if "<!-- tpu-plot -->" in markdown:
        from docs_build.tpu import plot  # it draws from this module's results

        markdown = markdown.replace(plot.PLOT, plot.figure())
    if APPROACHES_TABLE in markdown:
        markdown = markdown.replace(APPROACHES_TABLE, approaches_table())
    markdown = PROGRAMS_TABLE.sub(lambda m: programs_table(m.group(1)), markdown)
    markdown = WORK_TABLE.sub(lambda m: work_table(m.group(1)), markdown)
    markdown = MEMORY_TABLE.sub(lambda m: memory_table(m.group(1)), markdown)
    if HYBRID_TABLE in markdown:
        markdown = markdown.replace(HYBRID_TABLE, hybrid_table())
    if MODEL_TABLE in markdown:
        markdown = markdown.replace(MODEL_TABLE, model_table())
    markdown = MODEL_NUMBER.sub(lambda m: f"{params_mib():.1f} MiB", markdown)
    return NUMBER.sub(lambda m: number(*m.groups()), markdown)


def params_mib(data: dict | None = None) -> float:
    """The compiled MLP's parameters, in MiB (f32)."""
    m = (data or results())["model"]
    return cm.MLP(m["d"], m["hidden"], m["batch"]).params * cm.F32 / MIB
