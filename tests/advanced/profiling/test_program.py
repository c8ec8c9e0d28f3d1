"""The forward pass the page profiles: weights split like the batch put two all-gathers in
every call; whole weights take them out and change no number."""

import re
from pathlib import Path

import jax
import numpy as np
import pytest
from jax import P
from jax.sharding import AxisType

from docs_build import hlo
from snippets.advanced.profiling import program, slower
from snippets.hlo import count_collectives
from tests.advanced.profiling.printed import quietly

PAGE = Path(__file__).resolve().parents[3] / "docs" / "advanced" / "profiling.md"


def page_text() -> str:
    return " ".join(PAGE.read_text(encoding="utf-8").split())


def test_one_explicit_axis_over_the_eight_devices(mesh, devices):
    assert dict(mesh.shape) == {"x": 8}
    assert mesh.axis_types == (AxisType.Explicit,)
    assert sorted(mesh.device_ids.ravel()) == [d.id for d in devices]


def test_the_split_weights_are_split_like_the_batch(split):
    (x, w1, w2), printed = split
    assert printed == "float32[64@x,128] float32[128@x,256] float32[256@x,128]\n"
    for array in (x, w1, w2):
        assert array.sharding.spec == P("x", None)
    assert [a.addressable_shards[0].data.shape for a in (x, w1, w2)] == [
        (8, 128),
        (16, 256),
        (32, 128),
    ]


def test_placement_changes_where_the_numbers_live_not_the_numbers(mesh, split):
    whole = program.inputs(mesh, P())
    for a, b in zip(split[0], whole, strict=True):
        np.testing.assert_array_equal(a, b)
    assert [w.sharding.spec for w in whole[1:]] == [P(), P()]
    assert {s.data.shape for s in whole[1].addressable_shards} == {(128, 256)}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"batch": 60},
            r"batch=60 does not split over 8 devices: make it a multiple of 8",
        ),
        (
            {"hidden": 260},
            r"w2 \(260, 128\) cannot be split as P\('x', None\): 260 is not a multiple of 8",
        ),
        (
            {"d": 100, "spec": P(None, "x")},
            r"w2 \(256, 100\) cannot be split as P\(None, 'x'\): 100 is not a multiple",
        ),
    ],
)
def test_sizes_that_do_not_split_are_refused(mesh, kwargs, message):
    spec = kwargs.pop("spec", P("x", None))
    with pytest.raises(ValueError, match=message):
        program.inputs(mesh, spec, **kwargs)


@pytest.fixture(scope="module")
def found(split):
    """The compiled forward pass with split weights, and what the page printed for it."""
    return quietly(program.find_in_hlo, *split[0])


def test_the_compiled_forward_pass_gathers_both_weights_whole(found):
    compiled, printed = found
    assert count_collectives(compiled) == {"all-gather": 2}
    assert printed.splitlines() == [
        "all-gather          2",
        "all-gather = all-gather(param.1) -> f32[128,256]",
        "all-gather.1 = all-gather(param.2) -> f32[256,128]",
    ]
    # The build's own HLO reader agrees: two all-gathers, each a whole weight's bytes.
    read = hlo.read(compiled.as_text())
    assert sorted(c.kind for c in read.collectives) == ["all-gather", "all-gather"]
    assert sorted(c.result_bytes for c in read.collectives) == [4 * 128 * 256] * 2


def test_the_page_quotes_the_parameter_lines_of_the_compiled_text(found):
    compiled, _ = found
    lines = [line.strip() for line in compiled.as_text().splitlines()]
    text = page_text()
    for name, arg, shape in (
        ("param.1", 1, "f32[16,256]"),
        ("param.2", 2, "f32[32,128]"),
    ):
        line = next(line for line in lines if line.startswith(f"%{name} = "))
        assert re.match(
            rf"%{name} = {re.escape(shape)}\{{1,0\}} parameter\({arg}\)", line
        )
        assert f'op_name="w{arg}"' in line
    quoted = '%param.1 = f32[16,256]{1,0} parameter(1), metadata={op_name="w1"}'
    assert quoted in lines and f"`{quoted}`" in text
    assert "`f32[128,256]` and `f32[256,128]`" in text


def test_whole_weights_take_the_collectives_out_and_change_no_number(fixed):
    ((_, w1, w2), compiled, slow, fast, expected), printed = fixed
    assert count_collectives(compiled) == {}
    assert [w.sharding.spec for w in (w1, w2)] == [P(), P()]
    assert fast.sharding.spec == P("x", None) and slow.sharding.spec == P("x", None)
    np.testing.assert_array_equal(fast, slow)
    np.testing.assert_allclose(fast, expected, rtol=1e-5, atol=1e-5)
    lines = printed.splitlines()
    assert lines[:3] == [
        "float32[128,256] float32[256,128]",
        "collectives: none",
        "the same numbers as before: True",
    ]
    assert lines[3] == "within 1e-05 of NumPy: True"


def test_print_hlo_collectives_reads_tuple_results(timed):
    on_eight = timed[0][1]
    compiled = slower.train_step.lower(*on_eight).compile()
    _, printed = quietly(program.print_hlo_collectives, compiled)
    (line,) = printed.splitlines()
    assert re.fullmatch(
        r"all-reduce(\.\d+)? = all-reduce\(dot\.\d+, dot\.\d+\) -> "
        r"\(f32\[256,128\], f32\[128,256\]\)",
        line,
    )
    assert jax.typeof(on_eight[1]).sharding.spec == P("x", None)
