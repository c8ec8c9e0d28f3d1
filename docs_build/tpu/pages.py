"""The TPU-compiled evidence on the pages: tables and numbers filled in from results.json.

A page writes `<!-- tpu-costs -->` where the table of wire bytes and memory per
device goes, and `<!-- tpu: TARGET / STRATEGY / wire -->` where one number goes in prose (MiB sent per
device per step). Both are read from the same
committed results (`nox -s tpu` regenerates them), so a number in the prose is the number in the
table, and a test checks the claims the prose makes about them.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

from docs_build.tpu.driver import RESULTS, TARGETS

TABLE = "<!-- tpu-costs -->"
NUMBER = re.compile(r"<!-- tpu: ([^/]+?) / ([^/]+?) / wire -->")
# The page's strategies, in the order the pages teach them.
STRATEGIES = ("data parallel", "FSDP", "tensor parallel", "2-D", "pipeline")
MIB = 2**20


class TpuPagesError(ValueError):
    """A page asks for a target or strategy that the results do not hold."""


@cache
def results(path: Path = RESULTS) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def program(target: str, strategy: str, data: dict | None = None) -> dict:
    data = data or results()
    for p in data["programs"]:
        if p["target"] == target and p["strategy"] == strategy:
            return p
    raise TpuPagesError(
        f"no compiled program for target {target!r} and strategy {strategy!r} in "
        f"{RESULTS.name}: run `nox -s tpu`, or use one of {list(TARGETS)}."
    )


def wire_mib(p: dict) -> float:
    """MiB each device sends per step, by the ring model, over every collective."""
    return sum(s["wire_bytes"] for s in p["summary"].values()) / MIB


def collectives(p: dict) -> str:
    """`4 all-gather, 1 all-reduce`, with runs per step where a loop repeats one."""
    parts = []
    for kind, s in sorted(p["summary"].items()):
        runs = f" \u00d7{s['runs'] // s['count']}" if s["runs"] != s["count"] else ""
        parts.append(f"{s['count']} {kind}{runs}")
    return ", ".join(parts) or "none"


def number(target: str, strategy: str) -> str:
    p = program(target.strip(), strategy.strip())
    return f"{wire_mib(p):.1f} MiB"


def table(data: dict | None = None) -> str:
    data = data or results()
    model, v = data["model"], data["versions"]
    targets = list(data["targets"])
    head = "| strategy | " + " | ".join(
        f"{t}<br>{data['targets'][t]['devices']} devices" for t in targets
    )
    lines = [head + " |", "|---|" + "---|" * len(targets)]
    for strategy in STRATEGIES:
        cells = []
        for t in targets:
            p = program(t, strategy, data)
            cells.append(f"**{wire_mib(p):.1f}** MiB: {collectives(p)}")
        lines.append(f"| {strategy} | " + " | ".join(cells) + " |")
    caption = (
        f"One training step of the MLP (width {model['d']}, hidden {model['hidden']}, "
        f"batch {model['batch']}, {model['dtype']}, Adam), per device. **Bold**: MiB sent "
        "per device per step, by the ring model, over every collective the compiled program "
        "runs (a collective in a loop counted once per trip), read from the compiled "
        "program by the site's HLO reader, then the collectives. Meshes over N devices: "
        "data N; model N; 2-D data N/4 \u00d7 model 4; pipeline stage N. Compiled ahead of "
        "time by JAX "
        f"{v['jax']} for the CPU backend and, with libtpu {v['libtpu']}, for each TPU "
        "topology; nothing ran on a TPU."
    )
    # Data, out of the search index like every generated output: the prose names it.
    rows = "\n".join(lines)
    return (
        f'<div class="tpu-costs" data-search-exclude markdown>\n\n{rows}\n\n'
        f"<small>{caption}</small>\n\n</div>\n"
    )


MODEL_TABLE = "<!-- tpu-model -->"


def model_table(data: dict | None = None) -> str:
    """Formula against compiled program, per strategy and target: state and wire bytes."""
    from docs_build import costmodel as cm

    data = data or results()
    m = data["model"]
    model = cm.MLP(m["d"], m["hidden"], m["batch"], m["pipeline_microbatches"])
    lines = [
        "| strategy | target | state per device<br>formula / compiled | "
        "sent per device per step<br>formula / compiled | the compiler's plan |",
        "|---|---|---|---|---|",
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
            lines.append(f"| {strategy} | {target} | {state} | {wire} | {said} |")
    caption = (
        "The cost model (docs_build/costmodel.py) against the compiled programs of the table "
        "above. State: parameters, Adam's two moments and the device's share of the batch, "
        "against memory_analysis()'s argument bytes. Sent: the ring model under the plan the "
        "compiler chose, against the HLO reader. **Bold**: a plan other than the one the "
        "training pages teach (weights gathered in f32, gradients reduce-scattered; f32 "
        f"activations between stages). Every formula is within {cm.TOLERANCE:.1%} of its "
        "compiled figure (tests/docs_build/test_costmodel.py)."
    )
    rows = "\n".join(lines)
    return (
        f'<div class="tpu-costs" data-search-exclude markdown>\n\n{rows}\n\n'
        f"<small>{caption}</small>\n\n</div>\n"
    )


def fill(markdown: str) -> str:
    """The page with its TPU tables and numbers filled in."""
    if TABLE in markdown:
        markdown = markdown.replace(TABLE, table())
    if MODEL_TABLE in markdown:
        markdown = markdown.replace(MODEL_TABLE, model_table())
    return NUMBER.sub(lambda m: number(*m.groups()), markdown)
