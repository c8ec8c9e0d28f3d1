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
- `<!-- gpu-card: matmul -->`: the bf16 product's speed beside the card's published peak.
"""

from __future__ import annotations

import json
import re
from functools import cache

from docs_build import costmodel as cm
from docs_build.compiled.driver import RESULTS
from docs_build.compiled.verify_gpu import collectives, committed_rows

RECORD = RESULTS / "gpu_card.json"
MARKER = re.compile(r"<!-- gpu-card: ([^>]+?) -->")
STAGES = {
    "file spec": "the committed spec file, one node of 8, as `nox -s gpu` compiles",
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
        f"machine with one {machine['name']} (driver {machine['driver']}, "
        f"{_software(data)}, {machine['date']}) and compared with those compiled here "
        "without a card. None of these passes ran the programs or autotuned them."
    )
    from docs_build.compiled.pages import _boxed  # pages fills this module's markers

    return _boxed(lines, caption)


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
        if what == "size":
            return f"{record()['probe']['matmul']['size']:,}"
        raise CardRecordError(f"unknown gpu-card marker {what!r}")

    return MARKER.sub(one, markdown)
