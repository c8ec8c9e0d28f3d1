"""The trace: JAX writes it where the page says, every device's ops are in it under the
compiled program's instruction names, and the page's reading of it is right."""

import gzip
import itertools
import json
import re
import statistics
from pathlib import Path

import pytest

from docs_build import hlo
from snippets.advanced.profiling import program, slower, trace
from tests.advanced.profiling.printed import quietly

PAGE = Path(__file__).resolve().parents[3] / "docs" / "advanced" / "profiling.md"


def test_jax_writes_xplane_and_trace_json_under_plugins_profile(forward):
    (log_dir, _, _), _ = forward
    files = sorted(
        p.relative_to(log_dir) for p in Path(log_dir).rglob("*") if p.is_file()
    )
    assert len(files) == 2
    for path in files:
        assert path.parts[:2] == ("plugins", "profile") and len(path.parts) == 4
    names = sorted(p.name for p in files)
    host = names[0].removesuffix(".trace.json.gz")
    assert names == [f"{host}.trace.json.gz", f"{host}.xplane.pb"]
    with gzip.open(Path(log_dir) / files[0], "rt", encoding="utf-8") as f:
        assert "traceEvents" in json.load(f)


def test_each_step_is_marked_once_and_printed(forward):
    (_, events, _), printed = forward
    marks = [e for e in events if e.get("name") == "predict"]
    assert [m["args"]["step_num"] for m in marks] == ["0", "1", "2"]
    assert all(m["ph"] == "X" for m in marks)
    assert printed.splitlines()[0] == "steps marked: ['0', '1', '2']"


def test_device_ops_name_the_program_and_the_device(forward):
    (_, events, _), _ = forward
    ops = [e for e in events if "hlo_op" in e.get("args", {})]
    assert {e["args"]["hlo_module"] for e in ops} == {"jit_predict"}
    assert {int(e["args"]["device_ordinal"]) for e in ops} == set(range(8))
    threads = {
        e["tid"]: e["args"]["name"]
        for e in events
        if e.get("ph") == "M" and e.get("name") == "thread_name"
    }
    assert {threads[e["tid"]].split("/")[0] for e in ops} == {"tf_XLAExecute"}


def test_the_page_says_which_events_it_relies_on_and_where_they_were_seen(forward):
    """The reader goes by names the CPU backend writes; the page says so, and says the
    shares of a step, made on threads that share the cores, do not carry over."""
    (_, events, _), _ = forward
    names = {e.get("name") for e in events}
    assert "Rendezvous" in names
    text = " ".join(PAGE.read_text(encoding="utf-8").split())
    assert (
        "These names are what the CPU backend writes, and the code relies on them"
        in text
    )
    assert "what share of the step they take" not in text
    assert "neither do the shares of a step they add up to" in text
    index = PAGE.with_name("index.md").read_text(encoding="utf-8")
    assert "see why eight virtual CPU devices can lose to one" in " ".join(
        index.split()
    )


def test_one_step_has_eight_lanes_running_the_compiled_instructions(forward, split):
    (_, _, spans), _ = forward
    assert sorted({s.device for s in spans}) == list(range(8))
    compiled = program.predict.lower(*split[0]).compile()
    names = set(re.findall(r"^\s*(?:ROOT )?%([\w.-]+) = ", compiled.as_text(), re.M))
    assert {s.op for s in spans} <= names
    gathers = {c.name for c in hlo.read(compiled.as_text()).collectives}
    assert {s.op for s in spans if s.kind == "collective"} == gathers
    assert gathers == {"all-gather", "all-gather.1"}
    for device in range(8):
        ran = [s for s in spans if s.device == device and s.kind != "waiting"]
        assert [s.op for s in ran] == [
            s.op for s in spans if s.device == 0 and s.kind != "waiting"
        ]
        assert len(ran) == len({s.op for s in ran})  # each op once per step


def test_ops_on_a_device_run_one_after_another(forward, train):
    """What makes a device's shares add up to at most 1."""
    for spans in (forward[0][2], train[0]):
        for device in range(8):
            ran = sorted(
                (s for s in spans if s.device == device and s.kind != "waiting"),
                key=lambda s: s.start,
            )
            for a, b in itertools.pairwise(ran):
                assert a.start + a.duration <= b.start + 1e-3, (a, b)


def test_every_collective_waits_inside_itself(forward, train):
    for spans in (forward[0][2], train[0]):
        collectives = [s for s in spans if s.kind == "collective"]
        assert collectives
        for c in collectives:
            waits = [
                s
                for s in spans
                if s.kind == "waiting" and (s.device, s.op) == (c.device, c.op)
            ]
            assert waits, c
            for w in waits:
                assert (
                    c.start <= w.start
                    and w.start + w.duration <= c.start + c.duration + 1e-3
                )


def test_the_all_gathers_come_first_and_take_most_of_the_step(forward):
    """The page: every device starts with the two all-gathers, which take most of the step."""
    (_, _, spans), _ = forward
    for device in range(8):
        ran = [s.op for s in spans if s.device == device and s.kind != "waiting"]
        assert ran[:2] == ["all-gather", "all-gather.1"]
        # then the compute: two matrix products and a tanh
        assert len(ran[2:]) == 3 and not any(trace.is_collective(op) for op in ran[2:])
        assert [op for op in ran[2:] if "tanh" in op] == ["wrapped_tanh"]
    collective = statistics.median(
        slower.shares(spans, d)[0]["collective"] for d in range(8)
    )
    assert collective > 0.5
    text = " ".join(PAGE.read_text(encoding="utf-8").split())
    assert (
        "Every device starts with the two all-gathers, and they take most of the step."
        in text
    )
    assert "The compute, two matrix products and a `tanh`" in text


def test_print_ops_lists_the_ops_in_order_with_their_times(forward):
    (_, _, spans), printed = forward
    lines = printed.splitlines()[1:]
    assert lines[:3] == [
        "devices in the trace: [0, 1, 2, 3, 4, 5, 6, 7]",
        "every device ran the same ops: True",
        "op                          kind        median over devices",
    ]
    rows = [re.split(r"\s{2,}", line, maxsplit=2) for line in lines[3:]]
    assert [r[0] for r in rows] == [
        s.op for s in spans if s.device == 0 and s.kind != "waiting"
    ]
    for op, kind, time in rows:
        assert kind == ("collective" if trace.is_collective(op) else "compute")
        median = statistics.median(
            s.duration for s in spans if s.op == op and s.kind == kind
        )
        assert time.startswith(f"{median:.1f} µs")
        assert ("of which waiting" in time) == (kind == "collective")


def test_the_fixed_program_traces_compute_only(fixed):
    (args, *_), _ = fixed
    spans, printed = quietly(trace.trace_fixed, *args)
    assert sorted({s.device for s in spans}) == list(range(8))
    assert {s.kind for s in spans} == {"compute"}
    assert "every device ran the same ops: True" in printed
    assert not any("all-gather" in line for line in printed.splitlines())


@pytest.mark.parametrize(
    ("op", "collective"),
    [
        ("all-gather", True),
        ("all-reduce.3", True),
        ("all-gather-start.1", True),
        ("all-gather-done.1", True),
        ("collective-permute", True),
        ("ynn_fusion.1", False),
        ("wrapped_tanh", False),
        ("dot.4", False),
    ],
)
def test_collectives_are_told_by_their_instruction_names(op, collective):
    assert trace.is_collective(op) is collective


def test_a_missing_step_or_trace_is_named(forward, tmp_path):
    (_, events, _), _ = forward
    with pytest.raises(
        ValueError,
        match=r"No step 7 named 'predict' in the trace; found \['0', '1', '2'\]",
    ):
        trace.step_spans(events, "predict", 7)
    with pytest.raises(ValueError, match=r"No step 0 named 'train'"):
        trace.step_spans(events, "train", 0)
    with pytest.raises(
        ValueError, match="holds 0 traces: give each capture a new directory"
    ):
        trace.trace_events(tmp_path)


def test_a_step_without_device_ops_is_refused():
    events = [
        {"ph": "X", "name": "predict", "ts": 0, "dur": 10, "args": {"step_num": "0"}}
    ]
    with pytest.raises(ValueError, match="Step 0 of 'predict' ran no device ops"):
        trace.step_spans(events, "predict", 0)


def test_nothing_to_trace_or_time_is_refused(split, tmp_path):
    with pytest.raises(ValueError, match="steps=0: trace at least one step"):
        trace.capture(program.predict, split[0], tmp_path, steps=0)
    with pytest.raises(ValueError, match="runs=0: time at least one call"):
        trace.median_us(program.predict, split[0], runs=0)
    assert not list(tmp_path.iterdir())  # refused before anything was written
