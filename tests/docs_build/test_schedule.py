"""The schedule reader (docs_build/compiled/driver.py `schedule`): the entry computation's
collectives and matmul runs in program order, as the overlap page draws them.

The CPU and H100 fixtures are the programs results/cpu.json and gpu.json hold for the FSDP
step (their --save-hlo text, trimmed): the reader must give exactly the stored schedules.
The TPU fixture is cut from the v5e:2x4 FSDP step; what it holds was read by hand from
its ENTRY.
"""

from pathlib import Path

import pytest

from docs_build import hlo
from docs_build.compiled import driver
from docs_build.compiled.results import results

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PROGRAMS = {(p["target"], p["strategy"]): p for p in results()["programs"]}


def read(name: str) -> tuple[str, list[dict]]:
    text = (FIXTURES / name).read_text()
    return text, [c.as_record() for c in hlo.read(text).collectives]


@pytest.mark.parametrize(
    "fixture,target",
    [("cpu_fsdp_step.hlo", "cpu"), ("gpu_h100x8_fsdp_step.hlo", "h100:1x8")],
)
def test_cpu_and_h100_schedules_are_the_stored_ones(fixture, target):
    text, records = read(fixture)
    assert driver.schedule(text, records) == PROGRAMS[target, "FSDP"]["schedule"]
