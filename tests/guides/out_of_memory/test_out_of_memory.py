"""The out-of-memory page: the error, the prediction, each fix's values and bytes, and the
activation formula against the compiled programs."""

import contextlib
import dataclasses
import io
import re
from pathlib import Path

import jax
import numpy as np
import pytest
from jax import P
from jax.sharding import NamedSharding

from docs_build.compiled import pages
from docs_build.compiled.targets import spec_value
from snippets.guides.out_of_memory import step, too_big

PAGE = Path(__file__).parents[3] / "docs" / "guides" / "out-of-memory.md"
SMALL = step.Sizes(layers=2, width=16, hidden=64, batch=32)
GIB = 2**30


@pytest.fixture(scope="module")
def data_mesh(devices):
    return too_big.make_mesh()


def printed(function, *args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = function(*args)
    return result, out.getvalue()


def test_the_error_names_one_devices_bytes_and_memory_analysis_said_so(data_mesh):
    zeros, said = printed(too_big.too_big, data_mesh)
    per_device = 4 * 2**26 * 2**24 // 8
    assert said == (
        "JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory allocating "
        f"{per_device} bytes.\n"
    )
    m, said = printed(too_big.predict, zeros)
    assert m.output_size_in_bytes == per_device == 512 * 2**40
    assert said == f"output bytes per device: {per_device:,}\nthat is 512 TiB\n"


def concrete(mesh, sizes, fixes, seed=0):
    """Arguments of the abstract shapes and shardings, with values."""
    state, x, y = step.abstract_inputs(mesh, sizes, fixes)
    leaves, tree = jax.tree.flatten((state, x, y))
    keys = jax.random.split(jax.random.key(seed), len(leaves))
    values = [
        jax.device_put(
            0.1 * jax.random.normal(k, a.shape, a.dtype)
            if a.ndim
            else np.zeros((), a.dtype),
            a.sharding,
        )
        for k, a in zip(keys, leaves, strict=True)
    ]
    return jax.tree.unflatten(tree, values)


@pytest.mark.parametrize("name", list(step.STEPS))
def test_every_fix_computes_the_step_as_written_on_one_device(data_mesh, name):
    fixes = step.STEPS[name]
    one = jax.make_mesh((1,), ("data",), devices=jax.devices()[:1])
    expected = step.make_step(one, step.Fixes())(*concrete(one, SMALL, step.Fixes()))
    state, x, y = concrete(data_mesh, SMALL, fixes)
    got = step.make_step(data_mesh, fixes)(state, x, y)
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(expected), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
    weights = got[0]["w1"]
    spec = P(None, "data") if fixes.fsdp else P()
    assert weights.sharding.is_equivalent_to(NamedSharding(data_mesh, spec), 3)
    rows = SMALL.width // 8 if fixes.fsdp else SMALL.width
    assert weights.addressable_shards[0].data.shape == (
        SMALL.layers,
        rows,
        SMALL.hidden,
    )
    if fixes.donate:
        assert state[0]["w1"].is_deleted()
    else:
        assert not state[0]["w1"].is_deleted()


@pytest.fixture(scope="module")
def table(data_mesh):
    return printed(step.fixes_table, data_mesh)


def test_the_table_is_memory_analysis_and_each_fix_does_what_the_page_says(table):
    table, said = table
    lines = said.splitlines()
    assert lines[0] == f"GiB per device, cpu backend; budget {step.BUDGET / GIB:.1f}"
    assert [line.split("  ")[0].strip() for line in lines[2:]] == list(step.STEPS)
    total = {name: sum(row.values()) for name, row in table.items()}
    assert [line.endswith("no") for line in lines[2:]] == [
        total[n] > step.BUDGET for n in step.STEPS
    ]
    assert total["as written"] > step.BUDGET >= total["+ FSDP"]
    written, donated = table["as written"], table["+ donate"]
    # donation: no new outputs, more temporaries, less in all
    assert donated["new outputs"] < 2**10 < written["new outputs"]  # (a counter)
    assert donated["temporaries"] > written["temporaries"]
    assert total["+ donate"] < total["as written"]
    # FSDP: the arguments to about an eighth (the counter and the batch stay whole)
    fsdp = table["+ FSDP"]
    assert 7.5 < donated["arguments"] / fsdp["arguments"] <= 8
    # remat and microbatches each cut temporaries; both together need more than remat
    assert table["+ remat"]["temporaries"] < fsdp["temporaries"] / 4
    assert table["+ 4 microbatches"]["temporaries"] < fsdp["temporaries"] / 2
    assert table["+ both"]["temporaries"] > table["+ remat"]["temporaries"]


def test_the_budget_is_three_quarters_of_the_h100_spec():
    assert spec_value("h100", "device_memory_size") == step.H100_BYTES
    assert pages.budget_bytes("h100") == step.BUDGET


def test_the_formula_counts_what_print_saved_residuals_lists():
    _, said = printed(step.residuals)
    without, with_ = said.split("with remat:\n")
    shapes = re.compile(r"^f32\[([\d@a-z,]+)\] output of scan", re.M)

    def scan_bytes(text):
        total = 0
        for dims in shapes.findall(text):
            total += 4 * np.prod([int(d.split("@")[0]) for d in dims.split(",")])
        return total

    assert scan_bytes(without) == step.activation_bytes(SMALL, 1, remat=False)
    assert scan_bytes(with_) == step.activation_bytes(SMALL, 1, remat=True)
    assert len(shapes.findall(without)) == 6 and len(shapes.findall(with_)) == 1


def test_the_five_hidden_arrays_are_what_the_page_says():
    """One block's residuals, by the operation that made each: the product, three of
    gelu's intermediate values (two products and 1 - tanh^2), and gelu's output."""
    import jax.numpy as jnp

    def block(x, w1, w2):
        return (x + jax.nn.gelu(x @ w1) @ w2).sum()

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        step.print_saved_residuals(
            block, jnp.ones((4, 3)), jnp.ones((3, 8)), jnp.ones((8, 3))
        )
    made = re.findall(r"^f32\[4,8\] output of (\w+)", out.getvalue(), re.M)
    assert sorted(made) == ["dot_general", "mul", "mul", "mul", "one_minus_square"]
    said = " ".join(PAGE.read_text().split())
    assert (
        "the product `x @ w1`, three intermediate values of `gelu`'s tanh approximation, "
        "and `gelu`'s output, which the gradient of `w2` needs" in said
    )


def test_the_remat_check_on_the_cpu(data_mesh, table):
    (saved, formula), said = printed(step.remat_check, data_mesh, table[0])
    assert abs(saved - formula) <= step.TOLERANCE * formula
    assert said.splitlines()[-1] == "within 5%: True"


def test_the_formula_holds_on_every_target_that_compiled_both_steps():
    checked = []
    for target in pages.results()["advanced"]["targets"]:
        if any("refused" in oom(target, n) for n in ("+ FSDP", "+ remat")):
            continue
        saved, formula = pages.remat_saving(target)
        assert abs(saved - formula) <= step.TOLERANCE * formula, target
        checked.append(target)
    assert {"cpu", "h100:1x8"} <= set(checked) and len(checked) >= 3


def test_the_prose_about_the_tpu_compiler_and_the_sizes():
    said = " ".join(PAGE.read_text().split())
    # the v5p compiled a step that memory_analysis() says does not fit its chip
    hbm = pages.HBM_OOM.search(oom("v5p:2x2x2", "as written")["refused"])[2]
    assert pages.needed_bytes(oom("v5p:2x2x2", "+ donate")) > float(hbm[:-1]) * GIB
    assert "+ donate" not in {
        p["strategy"].removeprefix("out of memory: ")
        for p in pages.results()["advanced"]["programs"]
        if p["target"] == "v5p:2x2x2" and "refused" in p
    }
    # "(the GPU compiler reports none)": no flops from the GPU compiler
    assert oom("h100:1x8", "+ remat")["cost"]["flops"] is None
    assert pages.remat_flops("cpu") > 0 and pages.remat_flops("v5p:2x2x2") > 0
    sizes = step.Sizes()
    weights = 2 * sizes.layers * sizes.width * sizes.hidden
    assert f"about {weights / 1e9:.1f} billion float32 weights" in said
    assert f"4 slices of {sizes.batch // 4:,} rows" in said


def test_the_page_run_is_the_compiled_cpu_program(table):
    for name, row in table[0].items():
        m = pages._oom("cpu", name, pages.results())["memory"]
        assert row == {
            "arguments": m["argument_bytes"],
            "new outputs": m["output_bytes"] - m["alias_bytes"],
            "temporaries": m["temp_bytes"],
        }


def oom(target, name):
    return pages._oom(target, name, pages.results())


def wire(p):
    return sum(s["wire_bytes"] for s in p["summary"].values())


@pytest.mark.parametrize("target", ["cpu", "h100:1x8"])
def test_the_prose_about_each_fix(target):
    temp = {n: oom(target, n)["memory"]["temp_bytes"] for n in step.STEPS}
    assert temp["+ donate"] > temp["as written"]  # the temporaries grow
    assert temp["+ 4 microbatches"] < temp["+ FSDP"]
    assert temp["+ both"] > temp["+ remat"]
    # every slice gathers the weights again: four times the bytes
    ratio = wire(oom(target, "+ 4 microbatches")) / wire(oom(target, "+ FSDP"))
    assert ratio == pytest.approx(4, rel=0.01)


def test_the_tpu_compiler_refuses_what_does_not_fit():
    refused = {
        (p["target"], p["strategy"])
        for p in pages.results()["advanced"]["programs"]
        if "refused" in p and p["strategy"].startswith("out of memory: ")
    }
    assert refused, "the page says a TPU refuses"
    assert {t for t, _ in refused} <= {"v5e:2x4", "v5p:2x2x2"}
    for target, name in refused:
        assert pages.refusal(
            oom(target, name.removeprefix("out of memory: "))
        ).startswith("refused: ")


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: step.Sizes(layers=0), "layers must be a positive integer"),
        (lambda: step.Sizes(width=2.5), "width must be a positive integer"),
        (lambda: step.make_step(None, step.Fixes(microbatches=0)), "microbatches"),
    ],
)
def test_bad_sizes_are_refused(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_a_batch_that_does_not_split_says_what_to_change(data_mesh):
    sizes = dataclasses.replace(SMALL, batch=36)
    with pytest.raises(
        ValueError, match="make batch a multiple of devices x microbatches"
    ):
        step.abstract_inputs(data_mesh, sizes, step.Fixes())
    with pytest.raises(ValueError, match=r"width \(with FSDP\) of devices"):
        step.abstract_inputs(
            data_mesh, dataclasses.replace(SMALL, width=12), step.Fixes(fsdp=True)
        )
