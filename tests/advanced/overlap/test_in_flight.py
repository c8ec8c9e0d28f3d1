"""The overlap page's `in_flight` reader, on the CPU program the page compiles and on stored
GPU and TPU programs (tests/docs_build/fixtures)."""

from pathlib import Path

import pytest

from snippets.advanced.overlap import in_flight as m

FIXTURES = Path(__file__).resolve().parents[2] / "docs_build" / "fixtures"


def fixture(name: str) -> str:
    return (FIXTURES / f"{name}.hlo").read_text()


def test_the_cpu_program_gathers_synchronously(capsys):
    hlo = m.gather_then_multiply()
    assert m.in_flight(hlo) == []
    assert hlo.count(" all-gather(") == 1
    assert "start/done pairs on cpu: []" in capsys.readouterr().out


def test_the_h100_fsdp_step_has_four_pairs_with_work_between():
    pairs = m.in_flight(fixture("gpu_h100x8_fsdp_step"))
    assert [name for name, _ in pairs] == [
        "all-gather-start.1",
        "all-gather-start",
        "reduce-scatter-start",
        "all-reduce-start",
    ]
    assert all(between and set(between) == {"fusion"} for _, between in pairs)


def test_the_v5e_ring_runs_its_first_permutes_back_to_back():
    pairs = m.in_flight(fixture("tpu_v5e_2x4_ring_matmul"))
    assert [n for n, _ in pairs] == [
        f"collective-permute-start{s}" for s in ["", ".1", ".2", ".3", ".4", ".5", ".6"]
    ]
    assert [len(b) for _, b in pairs[:5]] == [0] * 5
    assert "fusion" in pairs[6][1]
    # copy-start is a memory copy, not a collective: not listed
    assert not any(n.startswith("copy-start") for n, _ in pairs)


def test_a_start_without_its_done_is_an_error():
    text = fixture("gpu_h100x8_dp_step")
    entry = text.index("\nENTRY ")
    cut = text[:entry] + "\n".join(
        line for line in text[entry:].splitlines() if "all-reduce-done" not in line
    )
    with pytest.raises(ValueError, match="has no all-reduce-done"):
        m.in_flight(cut)
