"""What a real GPU said: the record `verify_gpu --out` wrote on a lent H100 (results/gpu_card.json).

The GPU results (results/gpu.json) are compiled here without a card. The record holds the
same programs compiled again on a machine with one NVIDIA H100, at the pinned jax with that
machine's CUDA 13 plugin, in three passes (`STAGES`), and what the card did with a few
programs of its own (`probe`: the out-of-memory errors, a bf16 matrix product's speed). This
module compares the stored passes with today's gpu.json, so a page's sentence about them is
only as true as the comparison (tests/docs_build/test_gpu_card.py), and renders the page
markers:

- `<!-- gpu-card: compiles -->`: per pass, how many programs have the committed collectives,
  and how far their temporaries are;
- `<!-- gpu-card: oom eager -->`, `<!-- gpu-card: oom jit -->`: the error, as the card raised it;
- `<!-- gpu-card: jit raised at -->`: when the jitted program's error came (`wait`: at
  `block_until_ready`, not at the call);
- `<!-- gpu-card: matmul -->`: the bf16 product's speed beside the card's published peak;
- `<!-- gpu-card: newer -->`: today's programs that the record never compiled;
  `<!-- gpu-card: newer said -->` the sentence that says so, or that there are none;
- `<!-- gpu-card: nodes said -->`: whether the `8 nodes` pass kept every program's
  collectives, and which changed how;
- `<!-- gpu-card: remat table -->`, `<!-- gpu-card: remat said -->`: the transformer step
  under each remat policy, timed on the card (results/gpu_card_remat.json, written by
  `card_remat`), and the sentence the remat page draws from it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from functools import cache

from docs_build import costmodel as cm
from docs_build.compiled.driver import RESULTS
from docs_build.compiled.verify_gpu import collectives, committed_rows

RECORD = RESULTS / "gpu_card.json"
REMAT_RECORD = RESULTS / "gpu_card_remat.json"
MARKER = re.compile(r"<!-- gpu-card: ([^>]+?) -->")
STAGES = {
    "file spec": "the committed spec file, one node of 8, as this site compiles them",
    "card spec": "the card's own spec, read from the GPU, one node of 8",
    "8 nodes": "the committed spec file, as 8 nodes of one GPU each",
}


class CardRecordError(ValueError):
    """The record lacks what a page asks of it."""


@cache
def record() -> dict:
    return json.loads(RECORD.read_text())


def _committed(target: str) -> dict[str, dict]:
    """name -> the committed one-node program of today's gpu.json."""
    return committed_rows(json.loads((RESULTS / "gpu.json").read_text()), target)


def compare(data: dict | None = None) -> dict[str, dict]:
    """stage -> {programs, same (collectives), equal (temporaries to the byte),
    largest (temporary difference, as a fraction of the committed figure)}."""
    data = data or record()
    rows = _committed(data["compared_with"]["target"])
    found = {}
    for stage in data["stages"]:
        got = data["found"][stage]
        names = [n for n in got if n in rows and "error" not in got[n]]
        if len(names) != len(got):
            missing = sorted(set(got) - set(names))
            raise CardRecordError(
                f"{stage}: {missing} failed on the card or are no longer in gpu.json"
            )
        deltas = {
            n: (got[n]["temp_bytes"] - rows[n]["memory"]["temp_bytes"])
            / rows[n]["memory"]["temp_bytes"]
            for n in names
            if rows[n]["memory"]["temp_bytes"]
        }
        widest = max(deltas, key=lambda n: abs(deltas[n]))
        found[stage] = {
            "programs": len(names),
            "same": sum(collectives(got[n]) == collectives(rows[n]) for n in names),
            "equal": sum(
                got[n]["temp_bytes"] == rows[n]["memory"]["temp_bytes"] for n in names
            ),
            "largest": deltas[widest],
            "largest_program": widest,
        }
    return found


def newer(data: dict | None = None) -> list[str]:
    """Today's one-node GPU programs that the record's passes never compiled: added to the
    site after the card was lent."""
    data = data or record()
    rows = _committed(data["compared_with"]["target"])
    seen = set().union(*(data["found"][stage] for stage in data["stages"]))
    return sorted(set(rows) - seen)


def _count_kinds(row: dict) -> str:
    """`8 collective-permute`, `1 all-gather`: a program's collectives, by kind."""
    counts = Counter(c["kind"] for c in row["collectives"])
    return " and ".join(f"{n} {kind}" for kind, n in counts.items()) or "none"


# how stage_said names the committed program and the pass's, stage by stage
SAID_AS = {
    "file spec": ("as compiled here", "on the card"),
    "card spec": ("as compiled here", "from the card's spec"),
    "8 nodes": ("on one node", "as 8 nodes"),
}


def stage_said(stage: str, data: dict | None = None) -> str:
    """What a pass's collectives said against the committed ones, as a clause: `the
    collectives stayed the same`, or which programs' changed, and how."""
    data = data or record()
    said = compare(data)[stage]
    if said["same"] == said["programs"]:
        return "the collectives stayed the same"
    rows = _committed(data["compared_with"]["target"])
    got = data["found"][stage]
    ours, theirs = SAID_AS[stage]
    changed = [
        f"“{n}” ({_count_kinds(rows[n])} {ours}, {_count_kinds(got[n])} {theirs})"
        for n in sorted(got)
        if collectives(got[n]) != collectives(rows[n])
    ]
    return (
        f"the collectives stayed the same in {said['same']} of {said['programs']} "
        f"programs; they changed in {', '.join(changed)}"
    )


def newer_said(data: dict | None = None) -> str:
    """The sentence before the passes' table: that the record holds every one-node
    program of today's gpu.json, or which ones were added since and compiled here only."""
    if not newer(data):
        return "The card compiled every one-node GPU program the site holds today"
    return (
        "The programs added to the site since then were compiled here only "
        f"({newer_text(data)})"
    )


def newer_text(data: dict | None = None) -> str:
    names = newer(data)
    if not names:
        return "none"
    return f"{len(names)}: " + ", ".join(f"“{n}”" for n in names)


def _software(data: dict) -> str:
    versions = data["machine"]["versions"]
    plugin = next(k for k in versions if k.endswith("-plugin"))
    return f"jax {versions['jax']} with {plugin} {versions[plugin]}"


def compiles_table(data: dict | None = None) -> str:
    data = data or record()
    lines = [
        "| compiled from | programs | same collectives | temporaries to the byte | "
        "largest temporary difference |",
        "|---|---:|---:|---:|---:|",
    ]
    for stage, said in compare(data).items():
        largest = (
            "none"
            if said["equal"] == said["programs"]
            else f"{said['largest']:+.1%} ({said['largest_program']})"
        )
        lines.append(
            f"| {STAGES[stage]} | {said['programs']} | {said['same']} | "
            f"{said['equal']} | {largest} |"
        )
    machine = data["machine"]
    caption = (
        f"The {data['compared_with']['target']} programs of this site, compiled again on a "
        f"machine with one {machine['name']} and compared with those compiled here "
        "without a card. None of these passes ran the programs or autotuned them."
    )
    how = f"On the card: driver {machine['driver']}, {_software(data)}, {machine['date']}."
    from docs_build.compiled.pages import _boxed  # pages fills this module's markers

    return _boxed(lines, caption, how)


def oom_block(which: str, data: dict | None = None) -> str:
    probe = (data or record())["probe"]
    if which not in ("eager", "jit") or "message" not in probe.get(which, {}):
        raise CardRecordError(f"the record holds no {which!r} out-of-memory error")
    said = probe[which]
    return f"```text\n{said['type']}: {said['message']}\n```"


def matmul_text(data: dict | None = None) -> str:
    """`668 TFLOP/s, 67% of the published 989.5`: the card's measured bf16 product."""
    said = (data or record())["probe"]["matmul"]
    peak = cm.H100.bf16_flops
    rate = said["flops"] / said["seconds"]
    return (
        f"{rate / 1e12:,.0f} TFLOP/s, {rate / peak:.0%} of the published "
        f"{peak / 1e12:,.1f}"
    )


@cache
def remat_record() -> dict:
    return json.loads(REMAT_RECORD.read_text())


# Config.remat, as card_remat stored it -> what the remat page calls it
REMAT_LABELS = {"False": "no remat", "True": "full remat"}
GIB = 2**30


def remat_rows(data: dict | None = None) -> dict[str, dict]:
    """policy label -> ms (median step), peak / temp / host / argument (GiB), spread (the
    largest timed step over the smallest, minus one) and predicted (argument + temp over
    the allocator's peak, minus one)."""
    data = data or remat_record()
    rows = {}
    for policy, said in data["policies"].items():
        if "error" in said:
            raise CardRecordError(
                f"policy {policy!r} failed on the card: {said['error']}"
            )
        memory = said["memory"]
        times = said["all_seconds"]
        rows[REMAT_LABELS.get(policy, policy)] = {
            "ms": said["seconds"] * 1e3,
            "peak": said["peak_bytes_in_use"] / GIB,
            "temp": memory["temp"] / GIB,
            "host": memory.get("host_temp", 0) / GIB,
            "argument": memory["argument"] / GIB,
            "spread": max(times) / min(times) - 1,
            "predicted": (memory["argument"] + memory["temp"])
            / said["peak_bytes_in_use"]
            - 1,
        }
    return rows


def _remat_size(data: dict) -> str:
    f = data["fields"]
    return (
        f"{data['batch']} sequences of {f['seq']:,} tokens, {f['layers']} layers of width "
        f"{f['d_model']:,}, {f['heads']} heads, MLP width {f['mlp']:,}, vocabulary "
        f"{f['vocab']:,}"
    )


def remat_table(data: dict | None = None) -> str:
    data = data or remat_record()
    rows = remat_rows(data)
    base = rows["no remat"]["ms"]
    lines = [
        "| policy | step (ms) | against no remat | peak on the card (GiB) | "
        "compiled temporaries (GiB) | kept on the host (GiB) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, row in rows.items():
        lines.append(
            f"| {label} | {row['ms']:.1f} | {row['ms'] / base:.2f}x | {row['peak']:.2f} | "
            f"{row['temp']:.2f} | {row['host']:.2f} |"
        )
    device = {said["device"] for said in data["policies"].values()}
    versions = data["versions"]
    plugin = next(k for k, v in versions.items() if k.endswith("-plugin") and v)
    caption = (
        f"The transformer step ({_remat_size(data)}) on one {', '.join(sorted(device))}, "
        f"each policy in a process of its own: the median of {data['timed']} timed steps "
        f"after {data['warm']}, and the allocator's peak after them."
    )
    how = (
        f"jax {versions['jax']} with {plugin} {versions[plugin]}, {data['generated']}."
    )
    from docs_build.compiled.pages import _boxed  # pages fills this module's markers

    return _boxed(lines, caption, how)


def remat_said(data: dict | None = None) -> str:
    """The remat page's sentence: full remat against none, offload, and how well the
    compiled memory analysis foretold the card's peak."""
    data = data or remat_record()
    rows = remat_rows(data)
    none, full = rows["no remat"], rows["full remat"]
    slowest = max(rows, key=lambda k: rows[k]["ms"])
    faster = "faster" if full["ms"] < none["ms"] else "slower"
    worst = max(abs(r["predicted"]) for r in rows.values())
    spread = max(r["spread"] for r in rows.values())
    return (
        f"Full remat was {faster} than no remat on the card, {full['ms']:.1f} ms against "
        f"{none['ms']:.1f} ms, with a peak of {full['peak']:.2f} GiB against "
        f"{none['peak']:.2f} GiB. The slowest was {slowest}, at {rows[slowest]['ms']:.1f} "
        f"ms. No step of any policy took more than {spread:.1%} longer than that policy's "
        f"fastest step, and for every policy the compiled arguments plus temporaries came "
        f"within {worst:.1%} of the peak the card's allocator reported"
    )


def fill(markdown: str) -> str:
    def one(match: re.Match) -> str:
        what = match.group(1)
        if what == "compiles":
            return compiles_table()
        if what.startswith("oom "):
            return oom_block(what.removeprefix("oom "))
        if what == "jit raised at":
            return {"wait": "when the result was waited for", "call": "at the call"}[
                record()["probe"]["jit"]["raised_at"]
            ]
        if what == "matmul":
            return matmul_text()
        if what == "card":
            return record()["machine"]["name"]
        if what == "newer":
            return newer_text()
        if what == "newer said":
            return newer_said()
        if what == "nodes said":
            return stage_said("8 nodes")
        if what == "remat table":
            return remat_table()
        if what == "remat said":
            return remat_said()
        if what == "size":
            return f"{record()['probe']['matmul']['size']:,}"
        raise CardRecordError(f"unknown gpu-card marker {what!r}")

    return MARKER.sub(one, markdown)
