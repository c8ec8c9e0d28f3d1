"""The "Beyond the basics" pages' programs compiled for TPU: complete, consistent, the CPU rows
what this environment compiles, and every claim the pages make about them true."""

import json
import math
from pathlib import Path

import pytest

from docs_build import hlo
from docs_build.tpu import advanced, driver, pages

ROOT = Path(__file__).resolve().parents[2]
RESULTS = json.loads(driver.RESULTS.read_text())
GROUP = RESULTS["advanced"]
PROGRAMS = {(p["target"], p["strategy"]): p for p in GROUP["programs"]}
TPU_TARGETS = [t for t in driver.ADVANCED_TARGETS if t != "cpu"]


def test_every_program_is_compiled_for_every_target():
    assert GROUP["targets"] == list(driver.ADVANCED_TARGETS)
    expected = {(t, n) for t in driver.ADVANCED_TARGETS for n in advanced.PROGRAMS}
    assert set(PROGRAMS) == expected
    assert len(GROUP["programs"]) == len(expected)
    assert not {k: p["error"] for k, p in PROGRAMS.items() if "error" in p}


@pytest.mark.parametrize("key", sorted(PROGRAMS), ids=" / ".join)
def test_each_program_agrees_with_itself(key):
    p = PROGRAMS[key]
    assert math.prod(p["mesh"].values()) == RESULTS["targets"][key[0]]["devices"]
    assert p["summary"] == hlo.summarize(p["collectives"])
    asynchronous = [c for c in p["collectives"] if c["form"] == "async"]
    assert [f["start"] for f in p["in_flight"]] == [c["name"] for c in asynchronous]
    assert all(f["matmuls"] >= 0 for f in p["in_flight"])


@pytest.mark.parametrize("name", list(advanced.PROGRAMS))
def test_cpu_rows_are_what_this_environment_compiles(devices, name):
    now = driver.describe("cpu", name, devices)
    stored = PROGRAMS["cpu", name]
    for field in ("source", "mesh", "collectives", "summary", "memory", "in_flight"):
        assert now[field] == stored[field], field


def test_every_program_names_a_function_of_the_pages():
    import importlib

    for name in advanced.PROGRAMS:
        module, _, function = PROGRAMS["cpu", name]["source"].rpartition(".")
        assert hasattr(importlib.import_module(module), function), name
    for path in advanced.SOURCES:
        assert path in driver.INPUTS and (ROOT / path).is_file()


def test_an_unknown_program_stops_the_build_with_what_to_do():
    with pytest.raises(pages.TpuPagesError, match=r"advanced\.py"):
        pages.fill("<!-- tpu-programs: no such program -->")


# ---------------------------------------------------------------- the manual control page


def page(name: str) -> str:
    return " ".join((ROOT / "docs" / "advanced" / name).read_text().split())


def test_the_manual_control_page_shows_both_matmuls_on_every_target():
    text = (ROOT / "docs" / "advanced" / "manual-control.md").read_text()
    assert "<!-- tpu-programs: gather matmul | ring matmul -->" in text
    assert "operands of 4096 \u00d7 4096 in bfloat16" in page("manual-control.md")
    assert advanced.MATMUL_SIZE == 4096


def test_the_manual_control_pages_claims_about_the_tpu_programs_hold():
    said = page("manual-control.md")
    for target in TPU_TARGETS:
        gather, ring = (
            PROGRAMS[target, "gather matmul"],
            PROGRAMS[target, "ring matmul"],
        )
        cpu_gather = PROGRAMS["cpu", "gather matmul"]
        # "both functions move bfloat16 ... the CPU program converts the operands to
        # float32 first and sends twice the bytes"
        assert {c["dtype"] for c in gather["collectives"] + ring["collectives"]} == {
            "bf16"
        }
        assert {c["dtype"] for c in cpu_gather["collectives"]} == {"f32"}
        assert pages.wire_mib(cpu_gather) == 2 * pages.wire_mib(gather)
        # "every permute of the ring is asynchronous"
        permutes = ring["collectives"]
        assert {c["kind"] for c in permutes} == {"collective-permute"}
        assert {c["form"] for c in permutes} == {"async"}
        # "it ran most of the permutes back to back, first, and scheduled multiplications
        # inside only the last few"
        counts = [f["matmuls"] for f in ring["in_flight"]]
        busy = [i for i, c in enumerate(counts) if c]
        assert busy and len(busy) < len(counts) / 2
        assert busy == list(range(busy[0], len(counts)))
        # "Both versions send the same bytes."
        assert pages.wire_mib(gather) == pages.wire_mib(ring)
    assert "Both versions send the same bytes." in said
    assert "scheduled multiplications inside only the last few" in said
