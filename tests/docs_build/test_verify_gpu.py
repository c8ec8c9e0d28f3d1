"""The real-card check (docs_build/compiled/verify_gpu.py) runs without a GPU only far enough to
refuse; its compile pass and comparison are exercised here on the CPU rows."""

import json

import pytest

from docs_build.compiled import driver, verify_gpu


def test_without_a_gpu_it_says_what_it_needs():
    with pytest.raises(
        SystemExit, match=r"no GPU: run this on a machine with an NVIDIA"
    ):
        verify_gpu.main([])


def test_a_compile_pass_reads_what_the_driver_stored(devices, tmp_path):
    """The pass the script runs per stage, on the CPU devices: the same collectives as the
    committed CPU rows, and a difference is seen as one."""
    stored = json.loads(driver.results_path("cpu").read_text())
    rows = {p["strategy"]: p for p in stored["programs"]}
    names = ["tensor parallel", "FSDP"]
    out = tmp_path / "found.json"
    verify_gpu._compile_all(devices, names, out)
    found = json.loads(out.read_text())
    for name in names:
        assert verify_gpu.collectives(found[name]) == verify_gpu.collectives(rows[name])
        assert found[name]["temp_bytes"] == rows[name]["memory"]["temp_bytes"]
    assert verify_gpu.collectives(found["FSDP"]) != verify_gpu.collectives(
        rows["tensor parallel"]
    )
