"""The explorer's moves in words a reader can use: sizes and times written as the planner
writes them, times bounded with the planner's published link rates, and, for a move the
script does not name, a program that compiles it and prints the collectives JAX inserted
(run here on 8 CPU devices and compared with the compiled grid)."""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from docs_build import costmodel as cm
from docs_build import explorer, planner_page

PAGE = Path(__file__).resolve().parents[2] / "docs" / "tools" / "sharding-explorer.md"
KINDS = r"(all-gather|all-reduce|all-to-all|reduce-scatter|collective-permute)"

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None, reason="the page's script runs under Node"
)


def test_sizes_and_times_read_as_the_planners():
    sizes = [0, 1, 999.5, 1023, 1024, 1536, 10 * 1024 - 1, 6 * 2**20, 5376, 3 * 2**30]
    sizes += [7**k for k in range(1, 16)]
    got = explorer.script_call("sizeText", [[n] for n in sizes])
    assert got == [planner_page.size_text(n) for n in sizes]
    assert got[sizes.index(6 * 2**20)] == "6.00 MiB"
    times = [0, 1e-9, 3.1457e-5, 1.2e-3, 0.5, 12.0, 999.9e-6]
    times += [5376 / 2e11 * k for k in range(1, 9)]
    got = explorer.script_call("timeText", [[t] for t in times])
    assert got == [planner_page.time_text(t) for t in times]


def test_time_bounds_use_the_planners_published_rates():
    rates = explorer.link_rates()
    assert [c["key"] for c in rates["tpu"]] == ["v5e", "v5p"]
    assert [c["key"] for c in rates["gpu"]] == ["h100"]
    for backend in explorer.RATE_CHIPS:
        for chip in rates[backend]:
            links = cm.LINKS[chip["key"]]
            assert chip["rate"] == links.within and chip["url"] == links.url
            planner = planner_page.chip_facts(chip["key"])["networks"]
            assert chip["rate"] in {n["rate"] for n in planner.values()}
    assert rates["per_node"]["gpu"] == planner_page.GPU_NODE
    # the page names each rate, from the same data
    page = " ".join(explorer.fill(PAGE.read_text(encoding="utf-8")).split())
    for backend in explorer.RATE_CHIPS:
        for chip in rates[backend]:
            assert f"{chip['network']} at {chip['rate'] / 1e9:g} GB/s" in page
            assert f"]({chip['url']})" in page
    assert 'id="explorer-links"' in page


def test_a_moves_time_bound_is_its_steps_bytes_at_the_rate():
    named = [
        m
        for m in explorer.moves()
        if m["backend"] == "tpu" and len(m["plan"]) > 1 and m["target"] == "v5e:2x4"
    ]
    assert len(named) >= 3
    rate = cm.LINKS["v5e"].within
    got = explorer.script_call("moveSeconds", [[m["plan"], rate] for m in named])
    for move, seconds in zip(named, got, strict=True):
        assert seconds == pytest.approx(sum(s["wire"] for s in move["plan"]) / rate)


def unmodelled_on_eight() -> list[dict]:
    """Moves the script does not name on the CPU backend, on 8 devices, one per mesh and
    shape, with the compiled CPU plan of each."""
    picked, seen = [], set()
    for move in explorer.moves_report()["unmodelled"]:
        case = move["case"]
        key = (str(case["mesh"]), str(case["shape"]))
        if (
            move["backend"] == "cpu"
            and math.prod(case["mesh"]) == 8
            and key not in seen
        ):
            seen.add(key)
            picked.append(move)
    return picked


def test_a_move_the_script_does_not_name_gets_a_program_that_prints_its_collectives():
    moves = unmodelled_on_eight()[:3]
    assert len(moves) >= 2
    jobs = [explorer.move_job(m) for m in moves]
    programs = explorer.script_call(
        "moveProgram", [[explorer.move_case(j), j["target"]] for j in jobs]
    )
    for move, program in zip(moves, programs, strict=True):
        # the mesh, the source and the target of the move, and the devices it needs
        case = move["case"]
        assert explorer.spec_text(case["source"]) in program
        assert explorer.spec_text(case["target"]) in program
        assert "'jax_num_cpu_devices', 8)" in program
        proc = subprocess.run(
            [sys.executable, "-c", program],
            capture_output=True,
            text=True,
            env={**os.environ, "JAX_PLATFORMS": "cpu"},
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        lines = proc.stdout.splitlines()
        kinds = [re.search(rf" {KINDS}(-start)?\(", line).group(1) for line in lines]
        # what it prints is the compiled move's collectives, in the program's order
        assert kinds == [s["kind"] for s in move["plan"]], (case, proc.stdout)
        assert kinds
