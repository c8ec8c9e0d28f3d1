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
  (docs_build/compiled/advanced.py) on each 8-device target: collectives, bytes sent, and the
  matmuls scheduled while each asynchronous collective is in flight.
- `<!-- tpu-zero -->`: the FSDP page's ZeRO-1 and ZeRO-2 steps beside data parallelism
  and its FSDP step, on each 8-device target: collectives, bytes sent, arguments.
- `<!-- tpu-ulysses -->`: the sequence-parallel page's Ulysses attention against its ring,
  per head, on each 8-device target.
- `<!-- tpu-balance -->`: the expert-parallel page's load-balancing loss and its gradient
  for the router, on each 8-device target: each collective and the bytes sent.
- `<!-- tpu-ragged -->`: the expert-parallel page's ragged dispatch (`ragged_to_experts`) on
  each 8-device target: its collectives, what its ragged all-to-all can send and the buffer
  that receives it, or the backend's refusal where it has no code for the op.
- `<!-- tpu-expert-groups -->`: the expert-parallel FSDP page's training step on its ("data",
  "expert") mesh, experts copied over "data" and split over it (FSDP), on each 8-device
  target: each kind of collective with its group size, dtype and bytes sent, and the
  arguments per device.
- `<!-- tpu-work: NAME | NAME -->`: the same programs' floating-point operations per device,
  with their collectives and bytes sent.
- `<!-- tpu-memory: NAME | NAME -->`: the same programs' memory per device: the state by the
  page's formula against the compiled program's, its temporaries and its peak.
- `<!-- tpu-dtypes: NAME | NAME -->`: the same programs' bytes sent per device, by kind of
  collective and the dtype it carries; `<!-- tpu-dtypes-said: NAME -->` one sentence: the
  share of the gathered and of the reduced bytes each target sends in bfloat16.
- `<!-- gpu-fits: TARGET / NAME -->`: the bytes per device one of those programs needs, as the
  transformer page's `fits` adds them (arguments + outputs - aliased + temporaries), in MiB;
  `<!-- gpu-budget: CARD -->` the memory JAX's allocator takes of that card by default.
- `<!-- gpu-card: ... -->`: what a real H100 said (docs_build/compiled/card.py lists them).
- `<!-- tpu-remat-policies -->`: the transformer page's step under each remat policy of the
  remat page (docs_build/compiled/advanced.py REMAT_PAGE) on each 8-device target: its
  temporaries, its peak and its FLOPs against the step without remat.
- `<!-- tpu-pipeline-training -->`: the pipeline-training page's step under each schedule
  (GPipe, 1F1B; docs_build/compiled/advanced.py) on each 8-device target: its transfers
  between stages, the loss's all-reduce, its temporaries and peak;
  `<!-- tpu-pipeline-training-said -->` one sentence: how much less 1F1B's temporaries are
  than GPipe's on each target, against the bytes its smaller buffers save by the schedule.
- `<!-- tpu-plot -->`: the scaling plot, 8 to 256 chips (docs_build/compiled/plot.py).
- `<!-- tpu-model: params -->`: the compiled MLP's parameters, in MiB.
- `<!-- time-bounds -->`: lower bounds on the time of the data-parallel and FSDP steps on
  each TPU and GPU target (docs_build/steptime.py): compute, each network, the MFU bound;
  `<!-- time-threshold: N -->` the rows per device above which those steps, as taught, are
  compute-bound on N chips of each chip in costmodel.LINKS.
- `<!-- time-strategies: TARGETS -->`: the same bounds for the four training layouts on the
  targets named, with the bytes each sends (the choosing page);
  `<!-- time-thresholds: TARGETS -->` the rows per device above which each layout's
  matmuls outlast its communication on those targets' chips, under the plan each compiled
  program chose (docs_build/steptime.py `compute_bound_batch`).
- `<!-- overlap-chart: TARGET / PROGRAM -->` and `<!-- overlap-hide -->`: a program's
  schedule drawn, and when the FSDP step's gathers can hide (docs_build/compiled/overlap.py).
- `<!-- tpu: TARGET / STRATEGY / FIELD -->`: one number in prose, in MiB per device: `wire`
  (sent per step), `state` (the step's arguments), `temp` (its temporary buffers), `peak`,
  or for a program over several slices `ici` and `dcn` (sent within and between slices).

All are read from the same committed results (`nox -s tpu` or `nox -s gpu` regenerates them), so a number in
the prose is the number in a table, and tests check the claims each page makes about them.
"""

from __future__ import annotations

import math
import re

from docs_build import costmodel as cm
from docs_build import steptime
from docs_build.compiled import card as gpu_card
from docs_build.compiled import overlap, plot
from docs_build.compiled import targets as tg
from docs_build.compiled.results import (
    MIB,
    STRATEGIES,
    CompiledResultsError,
    collectives,
    family_of,
    floor_ms,
    links,
    mib,
    network_mib,
    program,
    results,
    wire_mib,
)

TABLE = "<!-- tpu-costs -->"
TABLES = re.compile(r"<!-- tpu-costs(?:: ([^>]+?))? -->")
COMPARE = re.compile(r"<!-- tpu-compare: ([^>]+?) -->")
NUMBER = re.compile(
    r"<!-- tpu: ([^/]+?) / ([^/]+?) / "
    r"(wire|state|temp|peak|ici|dcn|nvlink|ib|ici-ms|dcn-ms|nvlink-ms|ib-ms) -->"
)
HYBRID_TABLE = "<!-- tpu-hybrid -->"
HYBRID_TABLES = re.compile(r"<!-- tpu-hybrid(?:: (tpu|gpu))? -->")
APPROACHES_TABLE = "<!-- tpu-approaches -->"
PROGRAMS_TABLE = re.compile(r"<!-- tpu-programs: ([^>]+?) -->")
WORK_TABLE = re.compile(r"<!-- tpu-work: ([^>]+?) -->")
MEMORY_TABLE = re.compile(r"<!-- tpu-memory: ([^>]+?) -->")
DTYPES_TABLE = re.compile(r"<!-- tpu-dtypes: ([^>]+?) -->")
DTYPES_SAID = re.compile(r"<!-- tpu-dtypes-said: ([^>]+?) -->")
FITS = re.compile(r"<!-- gpu-fits: ([^/]+?) / ([^>]+?) -->")
BUDGET = re.compile(r"<!-- gpu-budget: (\w+) -->")
MODEL_NUMBER = re.compile(r"<!-- tpu-model: params -->")
# The out-of-memory page: bytes each step needs per device on every target, and how much
# remat saved against the page's formula.
NEEDED_TABLE = "<!-- tpu-needed -->"
REMAT_TABLE = "<!-- tpu-remat -->"
POLICIES_TABLE = "<!-- tpu-remat-policies -->"
PIPELINE_TRAINING_TABLE = "<!-- tpu-pipeline-training -->"
PIPELINE_TRAINING_SAID = "<!-- tpu-pipeline-training-said -->"
OOM_FLOPS = re.compile(r"<!-- oom-flops: ([^>]+?) -->")
OOM_REFUSED = re.compile(r"<!-- oom-refused: ([^/]+?) / ([^>]+?) -->")
OOM_NUMBER = re.compile(
    r"<!-- oom: ([^/]+?) / ([^/]+?) / (arguments|outputs|temp|needed|collectives) -->"
)
SPECS_TABLE = "<!-- gpu-specs -->"
OPTIONS_TABLE = "<!-- gpu-options -->"
SCHEDULE = re.compile(r"<!-- gpu-schedule: ([^/]+?) / ([^>]+?) -->")
TIME_TABLE = "<!-- time-bounds -->"
THRESHOLD = re.compile(r"<!-- time-threshold: (\d+) -->")
TIME_STRATEGIES = ("data parallel", "FSDP")
TIME_BY_STRATEGY = re.compile(r"<!-- time-strategies: ([^>]+?) -->")
THRESHOLDS = re.compile(r"<!-- time-thresholds: ([^>]+?) -->")
# The layouts whose FLOPs steptime models (the pipeline's program counts one tick).
PRICED = ("data parallel", "FSDP", "tensor parallel", "2-D")
# A table that sets the pipeline beside the training steps says what its step is.
ROW_LABEL = {"pipeline": "pipeline (forward pass only)"}


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
            raise CompiledResultsError(
                f"no compiled programs for target {t!r} in docs_build/compiled/results: use some of "
                f"{list(data['targets'])}, or add it to the targets of `nox -s tpu` or `nox -s gpu`."
            )
    return targets


def _where(data: dict, targets=None) -> str:
    """Where the figures come from: each family's compiler, and that nothing ran."""
    shown = {family_of(t) for t in (targets or data["targets"])}
    v = data["versions"]
    jax = next(iter(v.values()))["jax"]
    said = []
    if "cpu" in shown:
        said.append(
            "for the CPU backend (the program this site's 8 virtual devices run)"
        )
    if "tpu" in shown:
        said.append(f"with libtpu {v['tpu']['libtpu']} for each TPU topology")
    if "gpu" in shown:
        said.append(
            f"with jax-cuda12-plugin {v['gpu']['jax-cuda12-plugin']} for each GPU node "
            "layout, from the card's spec file (no autotuning, so a GPU's own compile may "
            "choose other kernels and differ a little in temporaries)"
        )
    hardware = " or a ".join(
        name for family, name in (("tpu", "TPU"), ("gpu", "GPU")) if family in shown
    )
    nothing = f"; nothing ran on a {hardware}." if hardware else "."
    return f"Compiled ahead of time by JAX {jax} " + ", ".join(said) + nothing


def _compiled(data: dict, targets=None) -> str:
    """Where a table's figures come from, for its one-sentence caption: the targets'
    families, compiled ahead of time, and that no TPU or GPU ran them (versions go in
    the fold, `_where`)."""
    shown = {family_of(t) for t in (targets or data["targets"])}
    names = [
        name
        for family, name in (("cpu", "CPU"), ("tpu", "TPU"), ("gpu", "GPU"))
        if family in shown
    ]
    listed = ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]
    hardware = " or a ".join(n for n in names if n != "CPU")
    nothing = f"; nothing ran on a {hardware}" if hardware else ""
    return f"compiled ahead of time for {listed}{nothing}"


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


MEASURED = "How this was measured"


def measured(how: str) -> str:
    """A closed fold under a table or figure: how its figures were made, with the build's
    files, sessions, package versions and tolerances, out of the reader's way."""
    return (
        f'<details class="measured" data-search-exclude markdown>\n<summary>{MEASURED}</summary>\n\n'
        f"{how}\n\n</details>\n"
    )


def _boxed(lines: list[str], caption: str, how: str = "") -> str:
    """A generated table, its one-sentence caption (what it shows, where its figures come
    from) and the fold saying how they were made, kept out of the search index (the prose
    names what it shows)."""
    rows = "\n".join(lines)
    fold = f"{measured(how)}\n" if how else ""
    return (
        f'<div class="tpu-costs" data-search-exclude markdown>\n\n{rows}\n\n'
        f"<small>{caption}</small>\n\n{fold}</div>\n"
    )


def table(data: dict | None = None, named: str | None = None) -> str:
    """Every strategy on the targets named (`cpu v5e:2x4`), or on every target: one table
    for CPU and TPU, one for GPU, so that neither grows too wide for a phone."""
    data = data or results()
    if named:
        return _table(data, _targets(data, named))
    return "\n".join(_table(data, group) for group in _wide_groups(data))


def _wide_groups(data: dict) -> list[list[str]]:
    """Every target, split for tables that give each target a column or rows of its own:
    CPU and TPU, then GPU, so that neither table grows too wide or long; an empty group is
    left out."""
    everything = list(data["targets"])
    groups = [
        [t for t in everything if family_of(t) != "gpu"],
        [t for t in everything if family_of(t) == "gpu"],
    ]
    return [group for group in groups if group]


def _table(data: dict, targets: list[str]) -> str:
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
        f"{_model(data)}. In **bold** the MiB each device sends per step, then the "
        f"collectives, {_compiled(data, targets)}."
    )
    how = (
        "Bytes sent by the ring model, over every collective the compiled program runs "
        "(a collective in a loop counted once per trip), read from the compiled program by "
        "the site's HLO reader (docs_build/hlo.py). Meshes over N devices: data N; model N; "
        f"2-D data N/4 \u00d7 model 4; pipeline stage N. {_where(data, targets)}"
    )
    # Data, out of the search index like every generated output: the prose names it.
    return _boxed(lines, caption, how)


def compare_table(named: str, data: dict | None = None) -> str:
    """One strategy (or `A | B`) on every target: collectives, bytes sent, memory."""
    data = data or results()
    strategies = [s.strip() for s in named.split("|")]
    several = len(strategies) > 1
    head = "| strategy " if several else ""
    # a lower bound on the step's time where steptime models its FLOPs (not the pipeline)
    timed = all(base_strategy(s) in PRICED for s in strategies)
    lines = [
        head
        + "| target | collectives per step | sent per device | state | temporaries "
        "| peak |" + (" step at least |" if timed else ""),
        ("|---" if several else "")
        + "|---|---|---:|---:|---:|---:|"
        + ("---:|" if timed else ""),
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
            if timed:
                cells.append("-" if family_of(target) == "cpu" else bound_cell(p, data))
            lead = f"| {strategy} " if several else ""
            lines.append(lead + "| " + " | ".join(cells) + " |")
    held = (
        "a stage's parameters, the microbatches"
        if strategies == ["pipeline"]
        else "parameters, Adam's moments, the batch"
    )
    caption = (
        f"{_model(data, strategies)}. What each device sends per step and the memory it "
        f"holds ({held} as state), from the compiled programs' own analyses, "
        f"{_compiled(data)}."
    )
    if timed:
        caption += (
            " Step at least: a lower bound on its time, the longest of its matmuls at "
            "the chip's published bf16 peak and each network's bytes at its published "
            "rate (in brackets, which one); none for the CPU."
        )
    how = (
        "Sent: MiB per step by the ring model, over every collective of the compiled "
        "program (read by docs_build/hlo.py). State: the step's arguments; temporaries "
        "and peak: the compiler's memory_analysis(). The CPU backend's peak figure reads "
        f"below its own temporaries, so it is not shown. {_where(data)}"
    )
    if timed:
        how += f" {_time_how(data, list(data['targets']))}"
    return _boxed(lines, caption, how)


def hybrid_table(data: dict | None = None, family: str | None = None) -> str:
    """Programs over several TPU slices or GPU nodes (or one family's): what each device
    sends within its slice or node, and between them."""
    data = data or results()
    m = data["model"]
    model = cm.MLP(m["d"], m["hidden"], m["batch"])
    hybrid = {
        "targets": [
            t for t in data["hybrid"]["targets"] if family in (None, family_of(t))
        ],
        "programs": [
            p
            for p in data["hybrid"]["programs"]
            if family in (None, family_of(p["target"]))
        ],
    }
    lines = [
        "| strategy | target | mesh | within a slice or node | between them "
        "| between, formula | sending takes at least: within / between |",
        "|---|---|---|---|---|---:|---:|",
    ]
    shown = []
    for p in hybrid["programs"]:
        family = tg.FAMILIES[family_of(p["target"])]
        speeds = links(p["target"])
        shown.append(speeds)
        unit = {"tpu": ("chips", "slices"), "gpu": ("GPUs", "GPUs")}[family.name]
        cells = []
        for network, names, label in (
            (family.within, unit[0], speeds.within_name),
            (family.between, unit[1], speeds.between_name),
        ):
            counts: dict[tuple[str, int], int] = {}
            for c in p["collectives"]:
                if c["network"] == network:
                    key = (c["kind"], c["group_size"])
                    counts[key] = counts.get(key, 0) + c["runs"]
            said = ", ".join(
                f"{n} {kind} over {g} {names}" for (kind, g), n in counts.items()
            )
            cells.append(
                f"{label}: **{network_mib(p, network):.1f} MiB**"
                + (f": {said}" if said else "")
            )
        mesh = " \u00d7 ".join(f"{k} {v}" for k, v in p["mesh"].items())
        formula = cm.dcn_bytes(p["mesh"], model) / MIB
        between = network_mib(p, family.between)
        departs = abs(between - formula) > cm.TOLERANCE * max(formula, between)
        formula_cell = f"**{formula:.1f} MiB**" if departs else f"{formula:.1f} MiB"
        lines.append(
            f"| {p['strategy']} | {p['target']} | {mesh} | {cells[0]} | {cells[1]} "
            f"| {formula_cell} | {floor_ms(p, family.within):.2f} / "
            f"{floor_ms(p, family.between):.2f} ms |"
        )
    speeds = "; ".join(
        f"{s.chip}: {s.within / 1e9:.0f} GB/s over {s.within_name} and "
        f"{s.between / 1e9:.3g} GB/s over {s.between_name}, from {s.source}"
        for s in dict.fromkeys(shown)
    )
    shown = {family_of(t) for t in hybrid["targets"]}
    over = " or ".join(
        name for f, name in (("tpu", "TPU slices"), ("gpu", "GPU nodes")) if f in shown
    )
    how = []
    if "tpu" in shown:
        how.append(
            "libtpu compiles one slice's program; what crosses between slices is a "
            "megascale host transfer, read as a collective over the slices."
        )
    if "gpu" in shown:
        how.append(
            "A GPU program spans every node: a collective counts as between nodes when one "
            "of its groups holds GPUs of two nodes, and its bytes count whole there, though "
            "a ring over it sends part of them over NVLink."
        )
    caption = (
        f"{_model(data, ['FSDP'])}, over several {over} (the batch split over both mesh "
        'axes, the weights over each one\'s own devices, "data"): MiB sent within and '
        "between them, beside the formula 2(S \u2212 1)/S \u00b7 P/n for S slices or nodes "
        "of n devices (**bold** where the compiled program departs from it), and the least "
        "time that sending takes at published link rates, "
        f"{_compiled(data, list(hybrid['targets']))}."
    )
    fold = (
        "Bytes sent per device per step by the ring model. "
        + " ".join(how)
        + " The formula is the site's cost model (docs_build/costmodel.py). "
        "Times: the bytes over what one device can send "
        f"({speeds}); a floor, not a measurement. "
        f"{_where(data, list(hybrid['targets']))}"
    )
    return _boxed(lines, caption, fold)


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
    caption = (
        "The layer of this page (x of 32, W of 32 \u00d7 4, x and W's rows split over 8 "
        "devices), as written above, per device: each collective, the bytes of its "
        "result and the bytes each device sends by the ring model, "
        f"{_compiled(data, targets)}."
    )
    return _boxed(lines, caption, _where(data, targets))


def advanced_program(target: str, name: str, data: dict | None = None) -> dict:
    data = data or results()
    for p in data["advanced"]["programs"]:
        if p["target"] == target and p["strategy"] == name:
            return p
    raise CompiledResultsError(
        f"no compiled program {name!r} for {target!r} in docs_build/compiled/results: add it to "
        "docs_build/compiled/advanced.py and run `nox -s tpu` or `nox -s gpu`."
    )


def _runs(s: dict) -> str:
    """How often a summary's collectives run, beside their count: times 2 when each runs
    twice (a loop), ` (9 runs)` when they do not run equally often (some in a loop, some
    outside it)."""
    runs, count = s["runs"], s["count"]
    if runs == count:
        return ""
    return f" \u00d7{runs // count}" if runs % count == 0 else f" ({runs} runs)"


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
        "Per device and per call, the collectives, the bytes they send and, for each "
        "asynchronous one, the matrix multiplications the compiler scheduled while it is in "
        f"flight (work the chip can do while the data travels), {_compiled(data)}."
    )
    how = (
        "Sent: by the ring model, over every collective. Last column: for each "
        "asynchronous collective in the order the compiled program starts them, the "
        "matmuls between its start and its done (docs_build/hlo.py's `in_flight`). "
        f"{_where(data)} Sizes: docs_build/compiled/advanced.py."
    )
    return _boxed(lines, caption, how)


def _advanced_rows(names: str, data: dict, row) -> list[str]:
    """One table row per program named (`A | B`) per target of the advanced group."""
    lines = []
    for name in (n.strip() for n in names.split("|")):
        for target in data["advanced"]["targets"]:
            cells = row(advanced_program(target, name, data))
            lines.append(f"| {name} | {target} | " + " | ".join(cells) + " |")
    return lines


def any_program(target: str, name: str, data: dict | None = None) -> dict:
    """A training step (`program`) or an advanced page's program, by name."""
    data = data or results()
    try:
        return program(target, name, data)
    except CompiledResultsError:
        return advanced_program(target, name, data)


def _kinds(p: dict) -> str:
    """`7 collective-permute, bf16, async`: each kind, its dtypes and how it runs; where
    its collectives run both ways, how many each: `4 all-gather, f32, 1 async + 3 sync`."""
    parts = []
    for kind, s in p["summary"].items():
        mine = [c for c in p["collectives"] if c["kind"] == kind]
        forms = [
            "async" if c["form"] in ("async", "async-fusion") else "sync" for c in mine
        ]
        how = " + ".join(
            f"{forms.count(f)} {f}" if len(set(forms)) > 1 else f
            for f in ("async", "sync")
            if f in forms
        )
        dtypes = "/".join(sorted({c["dtype"] for c in mine}))
        parts.append(f"{s['count']} {kind}{_runs(s)}, {dtypes}, {how}")
    return "; ".join(parts) or "none"


# The FSDP page's ZeRO steps beside the steps that keep (data parallel) and split
# (the FSDP page's own step) everything, on the advanced programs' targets.
ZERO_TABLE = "<!-- tpu-zero -->"
ZERO_STEPS = ("data parallel", "ZeRO-1 step", "ZeRO-2 step", "FSDP, explicit gather")
ZERO_LABELS = {"FSDP, explicit gather": "FSDP, this page's step"}


def zero_table(data: dict | None = None) -> str:
    """Per target, data parallelism, ZeRO-1, ZeRO-2 and FSDP: collectives, bytes sent,
    and the arguments (parameters, Adam's state, the batch) one device holds."""
    data = data or results()
    lines = [
        "| target | step | collectives | sent per device | arguments per device |",
        "|---|---|---|---|---|",
    ]
    for target in data["advanced"]["targets"]:
        for name in ZERO_STEPS:
            p = any_program(target, name, data)
            lines.append(
                f"| {target} | {ZERO_LABELS.get(name, name.removesuffix(' step'))} | "
                f"{_kinds(p)} | "
                f"{_size(wire_mib(p) * MIB)} | "
                f"{p['memory']['argument_bytes'] / MIB:,.1f} MiB |"
            )
    m = data["model"]
    caption = (
        f"One training step of the MLP (width {m['d']}, hidden {m['hidden']}, batch "
        f"{m['batch']}, float32, Adam) on 8 devices, per device: each kind of collective "
        "(its count, dtype and whether it runs asynchronously), the bytes sent by the ring "
        "model, and the arguments: parameters, Adam's state and the device's batch, "
        f"{_compiled(data, data['advanced']['targets'])}."
    )
    how = (
        "ZeRO-1 and ZeRO-2: this page's `compile_zero1` and `compile_zero2`; data "
        "parallel: the choosing page's step; FSDP: this page's `fsdp_step_for` "
        "(docs_build/compiled/advanced.py and steps.py). Arguments: memory_analysis()."
        f" {_where(data, data['advanced']['targets'])}"
    )
    return _boxed(lines, caption, how)


# The sequence-parallel page: Ulysses on 8 heads against the ring on one, per head.
ULYSSES_TABLE = "<!-- tpu-ulysses -->"


def ulysses_table(data: dict | None = None) -> str:
    """Per target: the ring's collectives and bytes for one head, Ulysses's for its
    heads, and both per head."""
    data = data or results()
    lines = [
        "| target | ring, 1 head | Ulysses, all heads | sent per head<br>ring / Ulysses |",
        "|---|---|---|---|",
    ]
    for target in data["advanced"]["targets"]:
        ring_p = advanced_program(target, "ring attention", data)
        uly = advanced_program(target, "Ulysses attention", data)
        heads = uly["extra"]["heads"]
        lines.append(
            f"| {target} | {_kinds(ring_p)} | {_kinds(uly)} | "
            f"{_size(wire_mib(ring_p) * MIB)} / {_size(wire_mib(uly) * MIB / heads)} |"
        )
    caption = (
        "Causal attention over 32768 positions of 128 features in bfloat16, per device: "
        "the ring's program for one head and Ulysses's for "
        f"{heads} heads (the fewest it takes on 8 devices), each kind of collective (its "
        "count, dtype and whether it runs asynchronously) and the bytes sent by the ring "
        f"model per head, {_compiled(data)}."
    )
    how = (
        "Sent per head: the ring's program sends for its one head; Ulysses's sends for all "
        f"its heads in the same collectives, divided by {heads}. {_where(data)} Sizes: "
        "docs_build/compiled/advanced.py."
    )
    return _boxed(lines, caption, how)


# The expert-parallel page: its load-balancing loss and that loss's gradient for the router.
BALANCE_TABLE = "<!-- tpu-balance -->"
BALANCE = ("MoE balance loss", "MoE balance loss gradient")


def _each(p: dict) -> str:
    """`all-reduce s32[8], all-reduce f32[8]`: each collective and what it carries."""
    return ", ".join(f"{c['kind']} {' '.join(c['shapes'])}" for c in p["collectives"])


RAGGED_TABLE = "<!-- tpu-ragged -->"
RAGGED = "MoE ragged dispatch"


def unimplemented_reason(p: dict) -> str:
    """A refused compile's reason, as the backend gave it: its first sentence."""
    message = p["refused"].removeprefix("JaxRuntimeError: ")
    return message.split(". ")[0].replace("`", "")


def ragged_table(data: dict | None = None) -> str:
    """Per target: the ragged dispatch's collectives, the most its ragged all-to-all sends
    (the input block), what it sends if the tokens spread evenly (the ring model's
    figure), and the receiving buffer; or the backend's refusal."""
    data = data or results()
    lines = [
        "| target | collectives | ragged all-to-all sends, at most | "
        "if the tokens spread evenly | receiving buffer |",
        "|---|---|---|---|---|",
    ]
    for target in data["advanced"]["targets"]:
        p = advanced_program(target, RAGGED, data)
        if "refused" in p:
            lines.append(f"| {target} | refused: {unimplemented_reason(p)} | | | |")
            continue
        (ragged,) = (c for c in p["collectives"] if c["kind"] == "ragged-all-to-all")
        lines.append(
            f"| {target} | {_each(p)} | {_size(ragged['full_bytes'])} | "
            f"{_size(ragged['wire_bytes'])} | {_size(ragged['result_bytes'])} |"
        )
    caption = (
        "Per device and per call, each collective with the array it delivers, what the "
        "ragged all-to-all can send and the buffer that receives it, "
        f"{_compiled(data)}."
    )
    how = (
        "At most: the device's whole input, every token bound for another device. If "
        "spread evenly: (N-1)/N of it, the ring model's figure for an all-to-all; what "
        "really travels is known only when the program runs. Receiving buffer: the "
        "ragged all-to-all's result. The program: the page's `ragged_to_experts`, jitted "
        f"by `on_experts` as its `ragged-cpu` block does. {_where(data)} Sizes: "
        "docs_build/compiled/advanced.py (the MoE layer's)."
    )
    return _boxed(lines, caption, how)


def balance_table(data: dict | None = None) -> str:
    """Per target: the loss's and its gradient's collectives, and the bytes each sends."""
    data = data or results()
    lines = [
        "| target | loss | sent | gradient for the router | sent |",
        "|---|---|---|---|---|",
    ]
    for target in data["advanced"]["targets"]:
        cells = []
        for name in BALANCE:
            p = advanced_program(target, name, data)
            cells += [_each(p), f"{wire_mib(p) * MIB:,.0f} B"]
        lines.append(f"| {target} | " + " | ".join(cells) + " |")
    caption = (
        "Per device and per call, each collective with the array it carries, and the bytes "
        f"sent by the ring model, {_compiled(data)}."
    )
    how = (
        "The loss: `balance_loss` jitted as `against_numpy` does; its gradient: "
        "`jax.grad` of it for the router, as `descend` takes it, with the tokens an "
        f"argument. {_where(data)} Sizes: docs_build/compiled/advanced.py."
    )
    return _boxed(lines, caption, how)


EXPERT_GROUPS_TABLE = "<!-- tpu-expert-groups -->"
EXPERT_STEPS = {
    "MoE step, data x expert": "data x expert",
    "MoE step, FSDP x expert": "FSDP x expert",
}


def expert_groups(p: dict) -> list[tuple[str, int, str, int, float]]:
    """(kind, group size, dtypes, count, bytes sent) for each kind and group size, in the
    order the program first runs them."""
    found: dict[tuple[str, int], list[dict]] = {}
    for c in p["collectives"]:
        found.setdefault((c["kind"], c["group_size"]), []).append(c)
    return [
        (
            kind,
            size,
            "/".join(sorted({c["dtype"] for c in cs})),
            len(cs),
            sum(c["wire_bytes"] for c in cs),
        )
        for (kind, size), cs in found.items()
    ]


def expert_groups_table(data: dict | None = None) -> str:
    """Per target and step: each kind of collective by group size, and what it sends."""
    data = data or results()
    lines = [
        "| target | step | collectives: count, kind, groups, dtype, sent | "
        "sent per device | arguments per device |",
        "|---|---|---|---|---|",
    ]
    for target in data["advanced"]["targets"]:
        for name, label in EXPERT_STEPS.items():
            p = advanced_program(target, name, data)
            each = "<br>".join(
                f"{n} {kind} in groups of {size}, {dtype}, {_size(sent)}"
                for kind, size, dtype, n, sent in expert_groups(p)
            )
            lines.append(
                f"| {target} | {label} | {each} | {_size(wire_mib(p) * MIB)} | "
                f"{p['memory']['argument_bytes'] / MIB:,.1f} MiB |"
            )
    caption = (
        "One SGD step of the MoE layer on a 2 x 4 (data, expert) mesh, per device and per "
        "call: each kind of collective by the size of its groups (4: within a row of "
        '"expert" devices, 2: across "data", 8: all), the bytes it '
        f"sends by the ring model, and the arguments, {_compiled(data)}."
    )
    how = (
        "The program: this page's `sgd_step` of `hybrid_layer`, on the target's 8 devices "
        "as a (2, 4) mesh. Sizes: the MoE layer's (docs_build/compiled/advanced.py), 8 "
        f'experts, two per "expert" device. Arguments: memory_analysis(). {_where(data)}'
    )
    return _boxed(lines, caption, how)


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
                "not reported"
                if p["cost"]["flops"] is None
                else f"{p['cost']['flops']:,.0f}",
                _kinds(p),
                _size(wire_mib(p) * MIB),
            ),
        ),
    ]
    caption = (
        "Per device and per call, the floating-point operations the compiler counted "
        "(cost_analysis()) and the bytes sent by the ring model over every collective, "
        f"{_compiled(data)}."
    )
    return _boxed(
        lines, caption, f"{_where(data)} Sizes: docs_build/compiled/advanced.py."
    )


def dtype_bytes(p: dict) -> dict[tuple[str, str], float]:
    """Bytes one device sends per call, by the ring model, by (kind, dtype): a collective
    over a tuple of arrays shares its bytes among them by their sizes."""
    sent: dict[tuple[str, str], float] = {}
    for c in p["collectives"]:
        parts = [(_shape_bytes(s), s.split("[")[0]) for s in c["shapes"]]
        whole = sum(n for n, _ in parts) or 1
        for n, dtype in parts:
            key = (c["kind"], dtype)
            sent[key] = (
                sent.get(key, 0.0) + c["wire_bytes"] * (c["runs"] or 1) * n / whole
            )
    return sent


def _shape_bytes(shape: str) -> int:
    dtype, dims = re.fullmatch(r"([a-z]\w*)\[([\d,]*)\].*", shape).groups()
    bits = int((re.search(r"\d+", dtype) or [8])[0])
    return math.ceil(bits * math.prod(int(n) for n in dims.split(",") if n) / 8)


def bf16_share(p: dict, kind: str) -> float:
    """The part of the bytes a program's collectives of `kind` send that is bfloat16."""
    sent = {dtype: n for (k, dtype), n in dtype_bytes(p).items() if k == kind}
    return sent.get("bf16", 0.0) / (sum(sent.values()) or 1)


def dtypes_table(names: str, data: dict | None = None) -> str:
    """Each program on each target: MiB sent per device by collective and dtype."""
    data = data or results()
    wanted = [n.strip() for n in names.split("|")]
    shown = [
        advanced_program(t, n, data)
        for n in wanted
        for t in data["advanced"]["targets"]
    ]
    kinds = sorted({k for p in shown for k, _ in dtype_bytes(p)})
    lines = [
        "| program | target | "
        + " | ".join(f"{k}<br>bf16 / f32" for k in kinds)
        + " |",
        "|---|---|" + "---|" * len(kinds),
        *_advanced_rows(
            names,
            data,
            lambda p: tuple(
                " / ".join(
                    f"{dtype_bytes(p).get((k, d), 0.0) / MIB:,.1f}"
                    for d in ("bf16", "f32")
                )
                + " MiB"
                for k in kinds
            ),
        ),
    ]
    other = {d for p in shown for _, d in dtype_bytes(p) if d not in ("bf16", "f32")}
    if other:
        raise CompiledResultsError(f"collectives in {sorted(other)}: add a column")
    caption = (
        "Per device and per call, the bytes each kind of collective sends by the ring "
        f"model, split by the dtype it carries, {_compiled(data)}."
    )
    return _boxed(
        lines, caption, f"{_where(data)} Sizes: docs_build/compiled/advanced.py."
    )


def dtypes_said(name: str, data: dict | None = None) -> str:
    """A sentence: the share of one program's gathered and reduced bytes sent in bf16."""
    data = data or results()
    parts = []
    for target in data["advanced"]["targets"]:
        p = advanced_program(target, name.strip(), data)
        parts.append(
            f"{bf16_share(p, 'all-gather'):.0%} and {bf16_share(p, 'all-reduce'):.0%} "
            f"on {target}"
        )
    return (
        f"In the step \u201c{name.strip()}\u201d, bfloat16 carries, of the bytes gathered "
        f"and of the bytes all-reduced, " + ", ".join(parts) + "."
    )


def needed_bytes(p: dict) -> int:
    """What the transformer page's `fits` computes, from the stored memory_analysis()."""
    m = p["memory"]
    return m["argument_bytes"] + m["output_bytes"] - m["alias_bytes"] + m["temp_bytes"]


def budget_bytes(card: str) -> int:
    """The bytes JAX's GPU allocator takes of `card` by default."""
    from snippets.advanced.transformer.memory import DEFAULT_FRACTION

    return int(tg.spec_value(card, "device_memory_size") * DEFAULT_FRACTION)


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
        f"Per device, from the compiled program's memory_analysis(), {_compiled(data)}. "
        "State: the formula above "
        "against the bytes the program writes back into its donated state (compiled less "
        f"formula: {said}). Temporaries: every other buffer the program allocates. Peak: the "
        "backend's own peak_memory_in_bytes."
    )
    how = f"{_where(data)} Sizes: docs_build/compiled/advanced.py."
    return _boxed(lines, caption, how)


GIB = 2**30


def oom_steps() -> dict:
    """The out-of-memory page's steps, by the names its table prints."""
    from snippets.guides.out_of_memory.step import STEPS

    return STEPS


def _oom(target: str, name: str, data: dict) -> dict:
    from docs_build.compiled.advanced import OOM_PREFIX

    return advanced_program(target, OOM_PREFIX + name, data)


def needed_table(data: dict | None = None) -> str:
    """Each of the out-of-memory page's steps, on each target: what one device needs."""
    data = data or results()
    targets = data["advanced"]["targets"]
    lines = [
        "| step | " + " | ".join(targets) + " |",
        "|---|" + "---:|" * len(targets),
    ]
    for name in oom_steps():
        cells = []
        for t in targets:
            p = _oom(t, name, data)
            if "refused" in p:
                cells.append(refusal(p))
            else:
                cells.append(
                    f"{needed_bytes(p) / GIB:,.1f} ({p['memory']['temp_bytes'] / GIB:,.1f})"
                )
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    caption = (
        "GiB per device: arguments + outputs - aliased + temporaries, from the compiled "
        f"program's memory_analysis(), {_compiled(data)}; temporaries alone in brackets. Refused: the compiler "
        "stopped with RESOURCE_EXHAUSTED, and the figures are its own, what the program "
        "needed and the memory the chip has. The TPU compiler keeps some buffers in on-chip "
        "memory, which these figures do not count."
    )
    return _boxed(lines, caption, _where(data))


HBM_OOM = re.compile(r"\(([\d.]+G)\) exceeds available HBM \(([\d.]+G)\)")


def refusal(p: dict) -> str:
    """A refused compile's cell: `refused: 107.09G > 15.75G`, libtpu's own figures."""
    found = HBM_OOM.search(p["refused"])
    if not found:
        raise CompiledResultsError(
            f"{p['target']} / {p['strategy']}: a refusal without libtpu's figures: "
            f"{p['refused'][:200]}"
        )
    return f"refused: {found[1]} > {found[2]}"


def remat_pair(target: str, data: dict) -> tuple[dict, dict]:
    """The out-of-memory page's step with FSDP, and the same step with remat, on `target`."""
    return _oom(target, "+ FSDP", data), _oom(target, "+ remat", data)


def remat_flops(target: str, data: dict | None = None) -> float:
    """How many more flops the step with remat counts than the one without, as a fraction."""
    data = data or results()
    without, with_ = (p["cost"]["flops"] for p in remat_pair(target, data))
    if not (without and with_):
        raise CompiledResultsError(f"{target}: the compiler reports no flops")
    return with_ / without - 1


def refused_block(target: str, name: str, data: dict | None = None) -> str:
    """The compiler's refusal of one step, as it stopped: the message up to its first
    sentence after the figures (the rest names the HLO module and libtpu's help)."""
    p = _oom(target, name, data or results())
    if "refused" not in p:
        raise CompiledResultsError(f"{target} / {name} compiled: nothing was refused")
    message = p["refused"].split(" HLO module:")[0]
    return f"```{{.text .no-copy}}\n{message}\n```"


def oom_number(target: str, name: str, field: str, data: dict | None = None) -> str:
    """One figure of one out-of-memory step on one target, as the page's prose says it."""
    p = _oom(target, name, data or results())
    if field == "collectives":  # "128 all-gathers and 64 reduce-scatters"
        said = [f"{s['runs']} {kind}s" for kind, s in p["summary"].items()]
        return " and ".join([", ".join(said[:-1]), said[-1]] if len(said) > 1 else said)
    m = p["memory"]
    value = {
        "arguments": m["argument_bytes"],
        "outputs": m["output_bytes"] - m["alias_bytes"],
        "temp": m["temp_bytes"],
        "needed": needed_bytes(p),
    }[field]
    return f"{value / GIB:,.1f} GiB"


def remat_saving(target: str, data: dict | None = None) -> tuple[int, int]:
    """(Temporaries remat saved on `target`, what the page's formula says it saves)."""
    from snippets.guides.out_of_memory.step import Sizes, activation_bytes

    data = data or results()
    without, with_ = remat_pair(target, data)
    saved = without["memory"]["temp_bytes"] - with_["memory"]["temp_bytes"]
    devices = math.prod(without["mesh"].values())
    formula = activation_bytes(Sizes(), devices, False) - activation_bytes(
        Sizes(), devices, True
    )
    return saved, formula


def remat_table(data: dict | None = None) -> str:
    data = data or results()
    lines = [
        "| target | remat saved | formula | compiled - formula |",
        "|---|---:|---:|---:|",
    ]
    for t in data["advanced"]["targets"]:
        if any("refused" in p for p in remat_pair(t, data)):
            lines.append(f"| {t} | refused | | |")
            continue
        saved, formula = remat_saving(t, data)
        lines.append(
            f"| {t} | {saved / GIB:,.2f} GiB | {formula / GIB:,.2f} GiB | "
            f"{(saved - formula) / formula:+.1%} |"
        )
    caption = (
        "Per device: the temporaries of the step with FSDP less those of the same step with "
        f"remat, from each compiled program's memory_analysis(), {_compiled(data)}."
    )
    return _boxed(lines, caption, _where(data))


def remat_policy_programs() -> dict[str, str]:
    """The remat page's policies (Config.remat) -> the compiled program of each."""
    from docs_build.compiled.advanced import REMAT_PAGE

    return {
        "False": "transformer step, no remat",
        "True": "transformer step, remat",
        **{repr(name): f"transformer step, remat {name}" for name in REMAT_PAGE},
    }


def policy_table(data: dict | None = None) -> str:
    """Per remat policy and target: temporaries, peak and FLOPs against no remat."""
    data = data or results()
    targets = data["advanced"]["targets"]
    names = remat_policy_programs()
    lines = [
        "| remat | " + " | ".join(targets) + " |",
        "|---|" + "---:|" * len(targets),
    ]
    for policy, name in names.items():
        cells = []
        for target in targets:
            p = advanced_program(target, name, data)
            if "refused" in p:
                cells.append("refused")
                continue
            none = advanced_program(target, names["False"], data)["cost"]["flops"]
            flops = p["cost"]["flops"]
            ratio = "" if not flops or not none else f"<br>{flops / none:.3f}x FLOPs"
            m = p["memory"]
            cells.append(
                f"{m['temp_bytes'] / MIB:,.1f} / {m['peak_bytes'] / MIB:,.1f} MiB{ratio}"
            )
        lines.append(f"| {policy} | " + " | ".join(cells) + " |")
    caption = (
        "The transformer page's step, per device: temporaries / peak from the compiled "
        "program's memory_analysis(), and its floating-point operations from "
        "cost_analysis() relative to the step without remat, where the backend reports "
        f"them, {_compiled(data, targets)}."
    )
    how = f"{_where(data, targets)} Sizes: docs_build/compiled/advanced.py."
    return _boxed(lines, caption, how)


def pipeline_training_programs() -> dict[str, str]:
    """The pipeline-training page's schedules (GPipe, 1F1B) -> the compiled program of each."""
    from docs_build.compiled.advanced import PIPELINE_SCHEDULES

    return {name: f"pipeline training, {name}" for name in PIPELINE_SCHEDULES}


def _kind(p: dict, kind: str) -> list[dict]:
    return [c for c in p["collectives"] if c["kind"] == kind]


def _permutes(p: dict) -> str:
    """`4 (sync) \u00d778`: the collective-permutes in the program's text, how many of them
    are asynchronous, and the times each runs per step (the schedule's loop)."""
    mine = _kind(p, "collective-permute")
    runs = {c["runs"] for c in mine}
    if not mine or len(runs) != 1:
        raise CompiledResultsError(
            f"{p['target']} / {p['strategy']}: expected collective-permutes that each run "
            f"the same number of times, found {[c['runs'] for c in mine]}"
        )
    forms = sorted(
        {"async" if c["form"] in ("async", "async-fusion") else "sync" for c in mine}
    )
    how = (
        forms[0]
        if len(forms) == 1
        else f"{sum(c['form'] != 'sync' for c in mine)} async"
    )
    return f"{len(mine)} ({how}) \u00d7{runs.pop()}"


PAIR = re.compile(r"\{(\d+),(\d+)\}")


def block_dtypes(p: dict) -> dict[str, str]:
    """The dtype each direction's block travels in ("forwards": stage s to s + 1,
    "backwards": s to s - 1), read from the collective-permutes' pairs; the scalar
    microbatch numbers beside them left out."""
    stages = math.prod(p["mesh"].values())
    found: dict[str, set[str]] = {}
    for c in _kind(p, "collective-permute"):
        pairs = {(int(a), int(b)) for a, b in PAIR.findall(c["replica_groups"])}
        if pairs == {(s, (s + 1) % stages) for s in range(stages)}:
            way = "forwards"
        elif pairs == {(s, (s - 1) % stages) for s in range(stages)}:
            way = "backwards"
        else:
            raise CompiledResultsError(
                f"{p['target']} / {p['strategy']}: a collective-permute over {pairs}, "
                "neither to the next stage nor to the previous one"
            )
        for shape in c["shapes"]:
            if "[]" not in shape:  # a block, not a microbatch number
                found.setdefault(way, set()).add(shape.split("[")[0])
    if set(found) != {"forwards", "backwards"} or any(
        len(v) != 1 for v in found.values()
    ):
        raise CompiledResultsError(
            f"{p['target']} / {p['strategy']}: expected one block dtype each way, "
            f"found {found}"
        )
    return {way: dtypes.pop() for way, dtypes in found.items()}


def pipeline_training_gap(target: str, data: dict | None = None) -> tuple[int, int]:
    """GPipe's temporaries less 1F1B's on one target, and the bytes 1F1B's smaller
    buffers save by the schedule (2 buffers x the microbatches held fewer x one's bytes)."""
    data = data or results()
    gpipe, one_f_one_b = (
        advanced_program(target, name, data)
        for name in pipeline_training_programs().values()
    )
    formula = gpipe["extra"]["buffer_bytes"] - one_f_one_b["extra"]["buffer_bytes"]
    compiled = gpipe["memory"]["temp_bytes"] - one_f_one_b["memory"]["temp_bytes"]
    return compiled, formula


def pipeline_training_table(data: dict | None = None) -> str:
    """Per target and schedule: transfers between stages, the loss's all-reduce, memory."""
    data = data or results()
    targets = data["advanced"]["targets"]
    lines = [
        "| target | schedule | collective-permutes | blocks<br>forwards / backwards | "
        "sent per device | loss all-reduce | temporaries | peak |",
        "|---|---|---|---|---:|---|---:|---:|",
    ]
    for target in targets:
        for schedule, name in pipeline_training_programs().items():
            p = advanced_program(target, name, data)
            reduce = _kind(p, "all-reduce")
            sent = sum(
                c["wire_bytes"] * c["runs"] for c in _kind(p, "collective-permute")
            )
            m = p["memory"]
            lines.append(
                f"| {target} | {schedule} | {_permutes(p)} | "
                f"{block_dtypes(p)['forwards']} / {block_dtypes(p)['backwards']} | "
                f"{_size(sent)} | "
                f"{len(reduce)}, {sum(c['result_bytes'] for c in reduce)} B | "
                f"{m['temp_bytes'] / MIB:,.1f} MiB | {m['peak_bytes'] / MIB:,.1f} MiB |"
            )
    extra = advanced_program(targets[0], pipeline_training_programs()["GPipe"], data)[
        "extra"
    ]
    caption = (
        "Per device, per step. Collective-permutes: the instructions in the compiled "
        "program (they carry each step's activations forwards, its gradients backwards "
        "and the microbatches' numbers), "
        "how they run, and the times each runs: once per step of the schedule's "
        f"{extra['steps']}-step loop. Blocks: the dtype of the activations sent to the "
        "next stage and of the gradients sent to the previous one. Sent: their bytes over "
        "the whole step. Loss "
        "all-reduce: the collectives of that kind and the bytes of their result. "
        "Temporaries and peak: memory_analysis(). One MLP of width "
        f"{data['model']['d']} and hidden {data['model']['hidden']} (f32) per stage, "
        f"{extra['microbatches']} microbatches of {extra['rows']} rows "
        f"({_size(extra['microbatch_bytes'])} each), {_compiled(data, targets)}."
    )
    how = f"{_where(data, targets)} Sizes: docs_build/compiled/advanced.py."
    return _boxed(lines, caption, how)


def pipeline_training_said(data: dict | None = None) -> str:
    """GPipe's temporaries less 1F1B's on each target, beside the bytes the schedule says
    1F1B's buffers save: `24.0 MiB on cpu and h100:1x8, ...; by the schedule, ...`."""
    data = data or results()
    gaps: dict[str, list[str]] = {}
    formulas = set()
    for target in data["advanced"]["targets"]:
        compiled, formula = pipeline_training_gap(target, data)
        gaps.setdefault(f"{compiled / MIB:,.1f} MiB", []).append(target)
        formulas.add(formula)
    if len(formulas) != 1:
        raise CompiledResultsError(
            f"the pipeline-training programs' buffers differ between targets: {formulas}"
        )
    gpipe, one_f_one_b = (
        advanced_program(data["advanced"]["targets"][0], name, data)["extra"]
        for name in pipeline_training_programs().values()
    )
    said = "; ".join(
        f"{gap} on {' and '.join(targets)}" for gap, targets in gaps.items()
    )
    return (
        f"GPipe's temporaries less 1F1B's: {said}. By the schedule, 1F1B's two buffers "
        f"hold {gpipe['held'] - one_f_one_b['held']} microbatches fewer each "
        f"({gpipe['held']} against {one_f_one_b['held']}), "
        f"2 \u00d7 {gpipe['held'] - one_f_one_b['held']} \u00d7 "
        f"{_size(gpipe['microbatch_bytes'])} = {formulas.pop() / MIB:,.1f} MiB"
    )


MODEL_TABLE = "<!-- tpu-model -->"


def model_table(data: dict | None = None) -> str:
    """Formula against compiled program, per strategy and target: state and wire bytes; one
    table for CPU and TPU, one for GPU."""
    data = data or results()
    return "\n".join(_model_table(data, group) for group in _wide_groups(data))


def _model_table(data: dict, targets: list[str]) -> str:
    m = data["model"]
    model = cm.MLP(m["d"], m["hidden"], m["batch"], m["pipeline_microbatches"])
    lines = [
        "| strategy | target | state per device<br>formula / compiled | "
        "temporaries<br>formula / compiled | "
        "sent per device per step<br>formula / compiled | the compiler's plan |",
        "|---|---|---|---|---|---|",
    ]
    for strategy in STRATEGIES:
        for target in targets:
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
            formula = cm.transient_bytes(strategy, p["mesh"], model, family_of(target))
            temp = (
                f"{'\u2014' if formula is None else f'{formula / MIB:.1f}'} / "
                f"{p['memory']['temp_bytes'] / MIB:.1f} MiB"
            )
            label = ROW_LABEL.get(strategy, strategy)
            lines.append(f"| {label} | {target} | {state} | {temp} | {wire} | {said} |")
    caption = (
        "The site's cost model against the compiled programs of the table above, per "
        "device; **bold**: a plan other than the one the training pages teach (weights "
        "gathered in f32, gradients reduce-scattered; f32 activations between stages)."
    )
    how = (
        "The cost model is docs_build/costmodel.py. State: parameters, Adam's two moments "
        "and the device's share of the batch, against memory_analysis()'s argument bytes. "
        "Temporaries: memory_analysis()'s temporary buffers, against a formula where one "
        "holds (\u2014: none does). Sent: the ring model under the plan the compiler chose, "
        "against the HLO reader. Every formula is within "
        f"{cm.TOLERANCE:.1%} of its compiled figure (tests/docs_build/test_costmodel.py)."
    )
    return _boxed(lines, caption, how)


def specs_table() -> str:
    """Each GPU card compiled for: its spec file's figures beside NVIDIA's published ones
    (tests/docs_build/test_gpu_specs.py holds them together)."""
    data = results()
    cards = dict.fromkeys(tg.card(t) for t in data["targets"] if family_of(t) == "gpu")
    lines = [
        "| card | SMs | memory | memory bandwidth | NVLink, out | network, out "
        "| source |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    sources = []
    for name in cards:
        c = cm.LINKS[name]
        memory = tg.spec_value(name, "device_memory_size") / 2**30
        bandwidth = tg.spec_value(name, "memory_bandwidth") / 1e12
        lines.append(
            f"| {c.chip} | {int(tg.spec_value(name, 'core_count'))} "
            f"| {memory:.1f} GiB | {bandwidth:.2f} TB/s | {c.within / 1e9:.0f} GB/s "
            f"| {c.between / 1e9:.0f} GB/s | [NVIDIA]({c.url}) |"
        )
        sources.append(
            f"{c.chip}: `docs_build/compiled/specs/{tg.CARDS[name]}.txtpb` and "
            f"{c.source}"
        )
    caption = (
        "What XLA compiled each GPU target for, from the card's spec file (SMs, device "
        "memory, memory bandwidth; the compiler's scheduler and rematerialization budget "
        "against this memory), and the link speeds the pages turn bytes into time with: "
        "NVLink within a node and the network between nodes, per GPU, in one direction, "
        "from NVIDIA's published figures (the last column links them)."
    )
    return _boxed(lines, caption, "Sources: " + "; ".join(sources) + ".")


def options_table(data: dict | None = None) -> str:
    """The training steps under XLA's GPU options, each beside its default compile."""
    from docs_build.compiled import steps

    data = data or results()
    lines = [
        "| step | compiled with | collectives | each carries | sent per device "
        "| temporaries | peak | matmuls during each async collective |",
        "|---|---|---|---|---:|---:|---:|---|",
    ]
    for target in data["options"]["targets"]:
        for strategy in ("data parallel", "FSDP"):
            rows = [("XLA's defaults", program(target, strategy, data))] + [
                (name, program(target, f"{strategy}, {name}", data))
                for name in steps.GPU_OPTIONS
            ]
            for name, p in rows:
                sizes = ", ".join(
                    _size(c["result_bytes"])
                    for c in p["collectives"]
                    if c["result_bytes"] >= 2**10
                )
                lines.append(
                    f"| {strategy} | {name} | {_kinds(p)} | {sizes} "
                    f"| {wire_mib(p):.1f} MiB | {mib(p, 'temp'):.1f} MiB "
                    f"| {mib(p, 'peak'):.1f} MiB | {_overlap(p)} |"
                )
    options = "; ".join(
        f"{name}: " + ", ".join(f"`{k}={v}`" for k, v in values.items())
        for name, values in steps.GPU_OPTIONS.items()
    )
    caption = (
        f"{_model(data, ['data parallel'])}, on one node of 8 H100s. Each carries: the "
        "result of each collective of a kilobyte or more, per device. Last column: for each "
        "asynchronous collective in the order the program starts them, how many matrix "
        "multiplications the compiler scheduled between its start and its done. The "
        f"options, passed to `compile(compiler_options=...)`: {options}. Compiled ahead "
        "of time; nothing ran on a GPU."
    )
    return _boxed(lines, caption, _where(data, list(data["options"]["targets"])))


def schedule_block(target: str, name: str, data: dict | None = None) -> str:
    """A program's collectives and matmuls in the order it runs them, as a text block."""
    p = program(target.strip(), name.strip(), data)
    lines = []
    for opcode, what, shapes in p["schedule"]:
        if opcode == "matmul":
            lines.append(f"    {what} matmul" + ("s" if what > 1 else ""))
        else:
            lines.append(f"{what:<28} {', '.join(shapes or [])}".rstrip())
    body = "\n".join(lines) or "(no collective in the entry computation)"
    return f"```{{.text .no-copy}}\n{body}\n```"


def fill(markdown: str) -> str:
    """The page with its TPU tables and numbers filled in."""
    markdown = TABLES.sub(lambda m: table(named=m.group(1)), markdown)
    markdown = COMPARE.sub(lambda m: compare_table(m.group(1)), markdown)
    markdown = plot.PLOTS.sub(
        lambda m: plot.figure(family=m.group(1) or "tpu"), markdown
    )
    if APPROACHES_TABLE in markdown:
        markdown = markdown.replace(APPROACHES_TABLE, approaches_table())
    markdown = PROGRAMS_TABLE.sub(lambda m: programs_table(m.group(1)), markdown)
    if ZERO_TABLE in markdown:
        markdown = markdown.replace(ZERO_TABLE, zero_table())
    if ULYSSES_TABLE in markdown:
        markdown = markdown.replace(ULYSSES_TABLE, ulysses_table())
    if BALANCE_TABLE in markdown:
        markdown = markdown.replace(BALANCE_TABLE, balance_table())
    if RAGGED_TABLE in markdown:
        markdown = markdown.replace(RAGGED_TABLE, ragged_table())
    if EXPERT_GROUPS_TABLE in markdown:
        markdown = markdown.replace(EXPERT_GROUPS_TABLE, expert_groups_table())
    markdown = WORK_TABLE.sub(lambda m: work_table(m.group(1)), markdown)
    markdown = MEMORY_TABLE.sub(lambda m: memory_table(m.group(1)), markdown)
    markdown = HYBRID_TABLES.sub(lambda m: hybrid_table(family=m.group(1)), markdown)
    if MODEL_TABLE in markdown:
        markdown = markdown.replace(MODEL_TABLE, model_table())
    markdown = DTYPES_TABLE.sub(lambda m: dtypes_table(m.group(1)), markdown)
    markdown = DTYPES_SAID.sub(lambda m: dtypes_said(m.group(1)), markdown)
    markdown = FITS.sub(
        lambda m: f"{needed_bytes(advanced_program(*m.groups())) / MIB:,.1f} MiB",
        markdown,
    )
    markdown = BUDGET.sub(
        lambda m: f"{budget_bytes(m.group(1)) / MIB:,.1f} MiB", markdown
    )
    markdown = MODEL_NUMBER.sub(lambda m: f"{params_mib():.1f} MiB", markdown)
    if NEEDED_TABLE in markdown:
        markdown = markdown.replace(NEEDED_TABLE, needed_table())
    if REMAT_TABLE in markdown:
        markdown = markdown.replace(REMAT_TABLE, remat_table())
    if POLICIES_TABLE in markdown:
        markdown = markdown.replace(POLICIES_TABLE, policy_table())
    if PIPELINE_TRAINING_TABLE in markdown:
        markdown = markdown.replace(PIPELINE_TRAINING_TABLE, pipeline_training_table())
    if PIPELINE_TRAINING_SAID in markdown:
        markdown = markdown.replace(PIPELINE_TRAINING_SAID, pipeline_training_said())
    markdown = OOM_NUMBER.sub(lambda m: oom_number(*m.groups()), markdown)
    markdown = OOM_REFUSED.sub(lambda m: refused_block(*m.groups()), markdown)
    markdown = OOM_FLOPS.sub(lambda m: f"{remat_flops(m.group(1)):.0%}", markdown)
    if SPECS_TABLE in markdown:
        markdown = markdown.replace(SPECS_TABLE, specs_table())
    if OPTIONS_TABLE in markdown:
        markdown = markdown.replace(OPTIONS_TABLE, options_table())
    markdown = SCHEDULE.sub(lambda m: schedule_block(*m.groups()), markdown)
    if TIME_TABLE in markdown:
        markdown = markdown.replace(TIME_TABLE, time_table())
    markdown = THRESHOLD.sub(lambda m: threshold_text(int(m.group(1))), markdown)
    markdown = TIME_BY_STRATEGY.sub(lambda m: strategy_time_table(m.group(1)), markdown)
    markdown = THRESHOLDS.sub(lambda m: threshold_table(m.group(1)), markdown)
    markdown = gpu_card.fill(markdown)
    markdown = overlap.fill(markdown)
    return NUMBER.sub(lambda m: number(*m.groups()), markdown)


def params_mib(data: dict | None = None) -> float:
    """The compiled MLP's parameters, in MiB (f32)."""
    m = (data or results())["model"]
    return cm.MLP(m["d"], m["hidden"], m["batch"]).params * cm.F32 / MIB


def chip_key(target: str) -> str:
    """The key in costmodel.LINKS of a TPU or GPU target's chip (`v5e`, `h100`)."""
    speeds = links(target)
    return next(key for key, value in cm.LINKS.items() if value is speeds)


def _mlp(data: dict) -> cm.MLP:
    m = data["model"]
    return cm.MLP(m["d"], m["hidden"], m["batch"], m["pipeline_microbatches"])


def base_strategy(name: str) -> str:
    """The layout a program's name varies: "FSDP, explicit gather" does FSDP's work."""
    return name.split(",")[0]


def step_bound(p: dict, data: dict | None = None) -> steptime.Bound:
    """A compiled program's lower bounds: its matmul FLOPs at the chip's bf16 peak, and
    the bytes it sends over each network at that network's published rate."""
    data = data or results()
    family = tg.FAMILIES[family_of(p["target"])]
    if family.within is None:
        raise CompiledResultsError(f"no published peak for target {p['target']!r}")
    flops = steptime.matmul_flops(base_strategy(p["strategy"]), p["mesh"], _mlp(data))
    sent = {net: network_mib(p, net) * MIB for net in (family.within, family.between)}
    return steptime.bound(flops, sent, chip_key(p["target"]))


def _us(seconds: float) -> str:
    """Microseconds, to 3 significant figures."""
    us = seconds * 1e6
    return f"{us:,.0f} \u00b5s" if us >= 100 else f"{us:.3g} \u00b5s"


def _percent(fraction: float) -> str:
    """A fraction as a percentage, to 2 significant figures (0.052%, 2.3%)."""
    return f"{float(f'{fraction * 100:.2g}'):g}%"


NETWORK_LABEL = {"ici": "ICI", "dcn": "DCN", "nvlink": "NVLink", "ib": "InfiniBand"}


def time_table(data: dict | None = None) -> str:
    """Lower bounds on the data-parallel and FSDP steps' time on every TPU and GPU target."""
    data = data or results()
    lines = [
        "| target | strategy | compute | within a slice or node | between | "
        "step at least | MFU bound |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    chips = {}
    for target in data["targets"]:
        family = tg.FAMILIES[family_of(target)]
        if family.within is None:
            continue
        chips[chip_key(target)] = links(target)
        for strategy in TIME_STRATEGIES:
            b = step_bound(program(target, strategy, data), data)
            within, between = family.within, family.between
            lines.append(
                f"| {target} | {strategy} | {_us(b.compute)} "
                f"| {NETWORK_LABEL[within]} {_us(b.networks[within])} "
                f"| {NETWORK_LABEL[between]} {_us(b.networks[between])} "
                f"| {_us(b.perfect_overlap)} | {_percent(b.mfu_bound)} |"
            )
    sources = "; ".join(f"{c.chip}: {c.source}" for c in chips.values())
    caption = (
        f"{_model(data, list(TIME_STRATEGIES))}: lower bounds on its time. Compute: the "
        f"step's matrix multiplications, {steptime.MATMULS} \u00b7 2 \u00b7 batch \u00b7 d "
        "\u00b7 hidden FLOPs over the devices, at the chip's published dense bfloat16 peak "
        "(no chip here publishes a faster float32 rate). Each network: the bytes the "
        "compiled program sends over it at that network's published rate, per chip and "
        "direction (a GPU collective whose group spans two nodes counts whole under "
        "InfiniBand). Step at least: the largest of these, as if "
        "everything overlapped; with no overlap the step takes their sum. MFU bound: "
        "compute over that least step time."
    )
    how = (
        f"Published figures (docs_build/costmodel.py): {sources}. "
        f"{_where(data, [t for t in data['targets'] if family_of(t) != 'cpu'])}"
    )
    return _boxed(lines, caption, how)


def threshold_rows(devices: int, data: dict | None = None) -> dict[str, float]:
    """Rows per device above which data parallelism and FSDP as taught are compute-bound
    on `devices` chips, for each chip in costmodel.LINKS (the same for both layouts)."""
    model = _mlp(data or results())
    return {
        key: steptime.compute_bound_rows("data parallel", devices, key, model)
        for key in cm.LINKS
    }


def threshold_text(devices: int, data: dict | None = None) -> str:
    """`1,380 rows per device on v5e, ...`: the thresholds, for prose."""
    rows = threshold_rows(devices, data)
    said = [f"{value:,.0f} on {cm.LINKS[key].chip}" for key, value in rows.items()]
    said[0] = said[0].replace(" on ", " rows per device on ", 1)
    return ", ".join(said[:-1]) + " and " + said[-1]


def bound_cell(p: dict, data: dict | None = None) -> str:
    """`294 µs (ICI)`: a program's least step time and what sets it."""
    b = step_bound(p, data)
    if b.compute >= b.communication:
        what = "compute"
    else:
        what = NETWORK_LABEL[max(b.networks, key=b.networks.get)]
    return f"{_us(b.perfect_overlap)} ({what})"


def _chips(targets: list[str]) -> list[cm.Links]:
    """The chips of the TPU and GPU targets named, once each, in order."""
    return list(dict.fromkeys(links(t) for t in targets if family_of(t) != "cpu"))


def _time_how(data: dict, targets: list[str]) -> str:
    """The fold's words for a table priced at published figures: each chip's source."""
    sources = "; ".join(f"{c.chip}: [{c.source}]({c.url})" for c in _chips(targets))
    return (
        "Time bounds (docs_build/steptime.py): the matrix multiplications, "
        f"{steptime.MATMULS} \u00b7 2 \u00b7 batch \u00b7 d \u00b7 hidden FLOPs over "
        "the devices, at the chip's dense bfloat16 peak, and each network's bytes at its "
        "rate per chip and direction; published figures (docs_build/costmodel.py): "
        f"{sources}."
    )


def _priced_targets(data: dict, named: str) -> list[str]:
    targets = _targets(data, named)
    for t in targets:
        if family_of(t) == "cpu":
            raise CompiledResultsError(
                f"{t!r} has no published peak or link rate: name TPU or GPU targets"
            )
    return targets


def strategy_time_table(named: str, data: dict | None = None) -> str:
    """Lower bounds on each training layout's step on the targets named: the bytes each
    device sends, its compute and each network's time, and the least step time."""
    data = data or results()
    targets = _priced_targets(data, named)
    lines = [
        "| target | strategy | sent per device | compute | within a slice or node "
        "| between | step at least |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for target in targets:
        family = tg.FAMILIES[family_of(target)]
        within, between = family.within, family.between
        n = data["targets"][target]["devices"]
        for strategy in PRICED:
            p = program(target, strategy, data)
            b = step_bound(p, data)
            lines.append(
                f"| {target}, {n} devices | {strategy} | {wire_mib(p):.1f} MiB "
                f"| {_us(b.compute)} "
                f"| {NETWORK_LABEL[within]} {_us(b.networks[within])} "
                f"| {NETWORK_LABEL[between]} {_us(b.networks[between])} "
                f"| {bound_cell(p, data)} |"
            )
    caption = (
        f"{_model(data, list(PRICED))}: the bytes it sends and lower bounds on its "
        f"time, from programs {_compiled(data, targets)}. Compute: its matrix multiplications "
        "at the chip's published bfloat16 peak. Each network: its bytes at that "
        "network's published rate (a GPU collective whose group spans two nodes counts "
        "whole under InfiniBand). Step at least: the longest of these, as if everything "
        "overlapped (in brackets, which one); a real step is slower."
    )
    how = f"{_time_how(data, targets)} {_where(data, targets)}"
    return _boxed(lines, caption, how)


def threshold_batches(
    named: str, data: dict | None = None
) -> dict[str, dict[str, float]]:
    """For each training layout, on each target named (one slice or node), the rows per
    device above which its matmuls outlast its communication, under the plan the
    target's compiled program chose (inf: at no batch)."""
    data = data or results()
    targets = _priced_targets(data, named)
    model = _mlp(data)
    found = {}
    for strategy in PRICED:
        found[strategy] = {}
        for target in targets:
            p = program(target, strategy, data)
            between = tg.FAMILIES[family_of(target)].between
            if network_mib(p, between):
                raise CompiledResultsError(
                    f"{target} / {strategy} sends over {between}: the threshold is "
                    "derived for one slice or node"
                )
            found[strategy][target] = steptime.compute_bound_batch(
                strategy, p["mesh"], chip_key(target), model, cm.plan_of(p)
            )
    return found


def rows_per_device(mesh: dict[str, int], data: dict) -> int:
    """The rows of the batch one device computes on: the batch over the `data` axis."""
    return data["model"]["batch"] // mesh.get("data", 1)


def threshold_table(named: str, data: dict | None = None) -> str:
    """The rows per device above which each layout is compute-bound, per target."""
    data = data or results()
    found = threshold_batches(named, data)
    targets = _priced_targets(data, named)
    lines = [
        "| layout | rows per device, compiled | "
        + " | ".join(f"{t} ({links(t).chip})" for t in targets)
        + " |",
        "|---|---:|" + "---:|" * len(targets),
    ]
    for strategy, by_target in found.items():
        meshes = {str(program(t, strategy, data)["mesh"]) for t in targets}
        if len(meshes) != 1:
            raise CompiledResultsError(
                f"{strategy} has different meshes on {targets}: compare one shape"
            )
        mesh = program(targets[0], strategy, data)["mesh"]
        cells = [
            "none" if math.isinf(rows) else f"{rows:,.0f}"
            for rows in by_target.values()
        ]
        lines.append(
            f"| {strategy} | {rows_per_device(mesh, data)} | "
            + " | ".join(cells)
            + " |"
        )
    caption = (
        "Rows per device (the batch over the data axis; tensor parallelism gives every "
        "device the whole batch) above which the step's matrix multiplications, at the "
        "chip's published bfloat16 peak, take longer than sending its bytes over the "
        "chip's own links, by the ring model under the plan each compiled program chose. "
        "None: sending the activations it all-reduces takes longer per row than its "
        "matmuls, so no batch makes it compute-bound."
    )
    how = (
        "Both times grow linearly with the rows per device, so they are equal at one "
        "batch (docs_build/steptime.py compute_bound_batch); the bytes follow the cost "
        "model's ring formulas (docs_build/costmodel.py wire_bytes), which give the "
        "compiled programs' bytes at the compiled batch. "
        f"{_time_how(data, targets)} {_where(data, targets)}"
    )
    return _boxed(lines, caption, how)
