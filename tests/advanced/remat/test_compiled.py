"""The remat page's table of compiled programs (docs_build/compiled/pages.py policy_table):
each policy's step on every 8-device target, read from results/{cpu,tpu,gpu}.json."""

import copy
from pathlib import Path

import pytest

from docs_build.compiled import pages
from docs_build.compiled.results import CompiledResultsError, results

PAGE = Path(__file__).resolve().parents[3] / "docs" / "advanced" / "remat.md"
DATA = results()
PROGRAMS = pages.remat_policy_programs()
# the policies' own programs (not the page's steps with and without remat)
POLICY_PROGRAMS = sorted(v for k, v in PROGRAMS.items() if k not in ("True", "False"))


def test_the_page_has_the_marker_and_a_program_for_every_policy_it_shows():
    from snippets.advanced.remat.policies import PAGE_POLICIES

    text = PAGE.read_text()
    assert pages.POLICIES_TABLE in text
    assert list(PROGRAMS) == [repr(p) for p in PAGE_POLICIES]


def test_the_table_reads_each_policys_program_on_each_target():
    """On results where every policy's program is a copy of the step with remat, with its
    own temporaries: each cell is that program's."""
    data = copy.deepcopy(DATA)
    programs = data["advanced"]["programs"] = [
        p for p in data["advanced"]["programs"] if p["strategy"] not in POLICY_PROGRAMS
    ]
    base = {p["target"]: p for p in programs if p["strategy"] == PROGRAMS["True"]}
    for n, name in enumerate(POLICY_PROGRAMS, start=1):
        for p in base.values():
            fake = copy.deepcopy(p)
            fake["strategy"], fake["memory"]["temp_bytes"] = name, n * pages.MIB
            programs.append(fake)
    table = pages.policy_table(data)
    for n, name in enumerate(POLICY_PROGRAMS, start=1):
        policy = next(k for k, v in PROGRAMS.items() if v == name)
        row = next(
            line for line in table.splitlines() if line.startswith(f"| {policy} ")
        )
        assert row.count(f"| {n:,}.0 / ") == len(base)
    assert "| False |" in table and table.count("1.000x FLOPs") >= 3  # CPU and TPUs


def test_a_missing_program_stops_the_table():
    data = copy.deepcopy(DATA)
    data["advanced"]["programs"] = [
        p for p in data["advanced"]["programs"] if p["strategy"] != PROGRAMS["True"]
    ]
    with pytest.raises(CompiledResultsError, match="no compiled program"):
        pages.policy_table(data)


def test_the_committed_results_fill_the_table():
    table = pages.fill(pages.POLICIES_TABLE)
    for policy in PROGRAMS:
        assert f"| {policy} |" in table
    for target in DATA["advanced"]["targets"]:
        p = pages.advanced_program(target, PROGRAMS["'names'"], DATA)
        assert f"{p['memory']['temp_bytes'] / pages.MIB:,.1f} / " in table
