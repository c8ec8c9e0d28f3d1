"""The schedule reader (docs_build/compiled/driver.py `schedule`): the entry computation's
collectives and matmul runs in program order, as the overlap page draws them.

The CPU and H100 fixtures are the programs results/cpu.json and gpu.json hold for the FSDP
step (their --save-hlo text, trimmed): the reader must give exactly the stored schedules.
The TPU fixture is cut from the v5e:2x4 FSDP step; what it holds was read by hand from
its ENTRY.
"""

import copy
import re
from pathlib import Path

import pytest

from docs_build import hlo
from docs_build.compiled import driver, overlap
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


# Read by hand from the fixture's ENTRY, in program order: three synchronous all-gathers;
# `async-collective-start`, a fusion whose body gathers all-gather.25 (bf16[4096,1024],
# the second kernel) and ends in custom-call AsyncCollectiveStart; `fusion.31`, whose body
# prints the same gather again (channel 4, chain 0) beside a convolution of %copy-done
# (the batch) with %all-gather.32 (the first kernel): layer 1's forward matmul;
# `async-collective-done`, the chain's last fusion (AsyncCollectiveDone); two fusions
# that multiply; `fusion`, kind=kCustom around all-reduce.7 and a dynamic-slice (the
# second kernel's gradient, reduce-scattered to f32[4096,128]); two more that multiply;
# `fusion.1`, the same for the first kernel (f32[128,4096]); all-reduce.9 of the loss and
# the biases.
V5E_FSDP = [
    ["all-gather", "all-gather.30", ["f32[8,1,128]"]],
    ["all-gather", "all-gather.31", ["f32[8,1,512]"]],
    ["all-gather", "all-gather.32", ["bf16[1024,4096]"]],
    ["all-gather-start", "all-gather.25", ["bf16[4096,1024]"]],
    ["matmul", 1, None],
    ["all-gather-done", "async-collective-done", None],
    ["matmul", 2, None],
    ["reduce-scatter", "fusion", ["f32[4096,128]"]],
    ["matmul", 2, None],
    ["reduce-scatter", "fusion.1", ["f32[128,4096]"]],
    ["all-reduce", "all-reduce.9", ["f32[]", "f32[1024]", "f32[4096]"]],
]


def test_a_tpu_async_fusion_chain_is_a_start_and_a_done_and_a_reduce_scatter_one_row():
    text, records = read("tpu_v5e_2x4_fsdp_schedule.hlo")
    entry = hlo.parse(text)
    order = [i.name for i in entry.computations[entry.entry].instructions.values()]
    assert order[3:6] == [
        "async-collective-start",
        "fusion.31",
        "async-collective-done",
    ]
    assert 'custom_call_target="AsyncCollectiveStart"' in text
    assert 'custom_call_target="AsyncCollectiveDone"' in text
    assert (
        text.count('chain_id="0"') == 3
    )  # the gather printed in each of the 3 fusions
    assert driver.schedule(text, records) == V5E_FSDP
    # the start row is named as the record, so the page finds its shapes
    (chained,) = [r for r in records if r["form"] == "async-fusion"]
    assert chained["name"] == "all-gather.25"
    assert {r["name"] for r in records if r["kind"] == "reduce-scatter"} == {
        "fusion",
        "fusion.1",
    }


def test_every_matmul_of_the_entry_is_counted_once():
    """The five fusions that multiply: layer 1's forward inside the chain, four outside;
    the chain's first and last fusion and the reduce-scatters hold no matmul."""
    text, records = read("tpu_v5e_2x4_fsdp_schedule.hlo")
    rows = driver.schedule(text, records)
    assert sum(r[1] for r in rows if r[0] == "matmul") == 5
    assert text.count(" convolution(") == 5


def test_the_overlap_drawing_spans_the_matmul_between_the_chains_start_and_done():
    schedule = driver.schedule(*read("tpu_v5e_2x4_fsdp_schedule.hlo"))
    spans, runs = overlap.spans(schedule)
    (gather,) = [s for s in spans if s.asynchronous]
    assert (gather.kind, gather.name, gather.first, gather.last, gather.matmuls) == (
        "all-gather",
        "all-gather.25",
        3,
        5,
        1,
    )
    assert gather.shapes == ("bf16[4096,1024]",)
    assert runs == [(4, 1), (6, 2), (8, 2)]
    assert [(s.kind, s.first) for s in spans if not s.asynchronous] == [
        ("all-gather", 0),
        ("all-gather", 1),
        ("all-gather", 2),
        ("reduce-scatter", 7),
        ("reduce-scatter", 9),
        ("all-reduce", 10),
    ]
    # as the page draws it once the results hold this schedule
    data = copy.deepcopy(results())
    stored = next(
        p
        for p in data["programs"]
        if p["target"] == "v5e:2x4" and p["strategy"] == "FSDP"
    )
    stored["schedule"] = schedule
    svg = overlap.svg("v5e:2x4", "FSDP", data)
    assert (
        'class="collective" data-kind="all-gather" data-first="3" data-last="5" '
        'data-matmuls="1"' in svg
    )
    assert svg.count('data-kind="reduce-scatter"') == 2
    words = overlap.describe("v5e:2x4", "FSDP", data)
    assert words[3] == (
        "all-gather starts (bf16[4096,1024]); 1 matmul run while it travels; "
        "then it is done"
    )
    assert words[6] == "reduce-scatter, synchronous (f32[4096,128])"


@pytest.mark.parametrize("parameter", ["%param_0.81", "%param_0.85", "%input"])
def test_a_matmul_fused_into_a_collective_is_not_compute_between(parameter):
    """A product inside the chain's first or last fusion, or inside a reduce-scatter, is
    part of that collective's row, not a run of matmuls (the fixture, with one `dot`
    added to the body of the start, the done or the first reduce-scatter)."""
    text, records = read("tpu_v5e_2x4_fsdp_schedule.hlo")
    line = next(x for x in text.splitlines() if x.strip().startswith(parameter + " "))
    dot = f"  %added.dot = f32[8,8] dot({parameter}, {parameter})"
    edited = text.replace(line, f"{line}\n{dot}")
    assert edited.count(" dot(") == 1
    assert driver.schedule(edited, records) == V5E_FSDP


def test_xlas_collective_matmul_is_read_from_its_loop():
    """The H100 program of the overlap page's XLA collective matmul keeps its collectives
    in a while loop: the entry's schedule is empty, and `loop_schedules` gives the stored
    record's loop (fixture: its --save-hlo text, trimmed)."""
    text, records = read("gpu_h100x8_xla_collective_matmul.hlo")
    stored = overlap.find("h100:1x8", "XLA collective matmul")
    assert driver.schedule(text, records) == stored["schedule"] == []
    assert driver.loop_schedules(text, records) == stored["loops"]
    assert len(stored["loops"]) == 1 and stored["loops"][0]["schedule"]
    # a program without a loop has none to record
    plain, plain_records = read("gpu_h100x8_dp_step.hlo")
    assert driver.loop_schedules(plain, plain_records) == []


def test_libtpus_collective_matmul_passes_blocks_both_ways_in_a_loop():
    """The v5e program of the same matmul with libtpu's option (fixture: its --save-hlo
    text, trimmed), read by hand: one permute in the entry, then a loop whose body sends
    a block each way (`collective-permute-start`, `-start.2`, reversed pairs), passes each
    on once it arrives (`-start.1` takes `-done`, `-start.3` takes `-done.2`) and holds two
    matmul fusions between those second starts and their dones. The reader gives the
    stored record's schedules."""
    text, records = read("tpu_v5e_2x4_xla_collective_matmul.hlo")
    stored = overlap.find("v5e:2x4", "XLA collective matmul")
    assert driver.schedule(text, records) == stored["schedule"]
    assert driver.loop_schedules(text, records) == stored["loops"]
    module = hlo.parse(text)
    (loop,) = [
        i
        for i in module.computations[module.entry].instructions.values()
        if i.opcode == "while"
    ]
    body = module.computations[loop.called("body")[0]].instructions
    pairs = {
        name: re.search(r"source_target_pairs=(\{[^ ]*\}\})", body[name].attributes)[1]
        for name in ("collective-permute-start", "collective-permute-start.2")
    }
    forward, backward = pairs.values()
    assert forward.startswith("{{0,1},{1,2}") and backward.startswith("{{1,0},{2,1}")
    assert body["collective-permute-start.1"].operands == ["collective-permute-done"]
    assert body["collective-permute-start.3"].operands == ["collective-permute-done.2"]
    order = list(body)
    between = order[
        order.index("collective-permute-start.3") : order.index(
            "collective-permute-done.1"
        )
    ]
    assert sum(hlo._multiplies(module, body[n], set()) for n in between) == 2
