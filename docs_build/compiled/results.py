"""The committed results of every family, merged, and what the tables read from a program.

`results()` joins results/cpu.json, tpu.json and gpu.json (the driver writes each in one
format) into one dictionary of the same shape: the targets in family order (CPU, TPU, GPU),
each group's programs, and per family its versions and input digests. `pages` and `plot`
both read through this module, so neither imports the other for data.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from docs_build import costmodel as cm
from docs_build.compiled import targets as tg
from docs_build.compiled.driver import RESULTS

MIB = 2**20
MEMORY = {"state": "argument_bytes", "temp": "temp_bytes", "peak": "peak_bytes"}
# The page's strategies, in the order the pages teach them.
STRATEGIES = ("data parallel", "FSDP", "tensor parallel", "2-D", "pipeline")
# The links of each family, by the name a collective's "network" gives them.
NETWORKS = ("ici", "dcn", "nvlink", "ib")


class CompiledResultsError(ValueError):
    """A page asks for a target or program that the results do not hold."""


def merge(parts: dict[str, dict]) -> dict:
    """One results dictionary from each family's (family -> its results file's content)."""
    merged: dict = {
        "families": {},
        "versions": {},
        "targets": {},
        "programs": [],
        "hybrid": {"targets": {}, "programs": []},
        "approaches": {"targets": [], "programs": []},
        "advanced": {"targets": [], "programs": []},
        "options": {"targets": [], "programs": []},
    }
    for family in tg.FAMILIES:
        if family not in parts:
            continue
        data = parts[family]
        if "model" in merged and data["model"] != merged["model"]:
            raise CompiledResultsError(
                f"{family}.json compiled another model than the others: rerun its session"
            )
        merged["model"] = data["model"]
        merged["families"][family] = {
            k: data[k] for k in ("generated", "seconds", "inputs") if k in data
        }
        merged["versions"][family] = data["versions"]
        merged["targets"] |= data["targets"]
        merged["programs"] += data["programs"]
        for key in ("hybrid", "approaches", "advanced", "options"):
            group = data.get(key, {})
            merged[key]["programs"] += group.get("programs", [])
            found = group.get("targets", [])
            if isinstance(merged[key]["targets"], dict):
                merged[key]["targets"] |= found
            else:
                merged[key]["targets"] += list(found)
    return merged


@cache
def results(directory: Path = RESULTS) -> dict:
    """Every family's committed results, merged."""
    parts = {
        family: json.loads(path.read_text(encoding="utf-8"))
        for family in tg.FAMILIES
        if (path := directory / f"{family}.json").exists()
    }
    return merge(parts)


def family_of(target: str) -> str:
    return tg.family(target)


def program(target: str, strategy: str, data: dict | None = None) -> dict:
    data = data or results()
    for p in (
        data["programs"] + data["hybrid"]["programs"] + data["options"]["programs"]
    ):
        if p["target"] == target and p["strategy"] == strategy:
            return p
    raise CompiledResultsError(
        f"no compiled program for target {target!r} and strategy {strategy!r} in "
        f"{RESULTS.relative_to(RESULTS.parents[2])}: use one of {list(data['targets'])}, "
        "or run `nox -s tpu` / `nox -s gpu` after adding it to docs_build/compiled/targets.py."
    )


def wire_mib(p: dict) -> float:
    """MiB each device sends per step, by the ring model, over every collective."""
    return sum(s["wire_bytes"] for s in p["summary"].values()) / MIB


def network_mib(p: dict, network: str) -> float:
    """MiB each device sends per step in the collectives that cross one network ("ici",
    "dcn", "nvlink", "ib"): a GPU collective whose group spans two nodes counts whole
    under "ib", though a ring over it sends some of those bytes over NVLink."""
    if network not in NETWORKS:
        raise CompiledResultsError(
            f"network must be one of {NETWORKS}, not {network!r}"
        )
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
    """A program's `field` (wire, state, temp, peak; or a network: sent over it), in MiB
    per device."""
    if field == "wire":
        return wire_mib(p)
    if field in NETWORKS:
        return network_mib(p, field)
    return p["memory"][MEMORY[field]] / MIB


def links(target: str) -> cm.Links:
    """The published link speeds of a target's chip (docs_build/costmodel.py)."""
    if family_of(target) == "gpu":
        return cm.LINKS[tg.card(target)]
    if family_of(target) == "tpu":
        # the chip generation names the topology: v5e:2x4, 2 slices of v5e:2x4, v5p:2x2x2
        match = tg.MULTI.fullmatch(target)
        chip = (match.group(3) if match else target).split(":")[0]
        if chip in cm.LINKS:
            return cm.LINKS[chip]
    raise CompiledResultsError(f"no published link speeds for {target!r}")


def floor_ms(p: dict, network: str) -> float:
    """The least time one device needs to send its `network` bytes, in milliseconds."""
    speeds = links(p["target"])
    per_second = speeds.within if network in ("ici", "nvlink") else speeds.between
    return cm.seconds(network_mib(p, network) * MIB, per_second) * 1e3
