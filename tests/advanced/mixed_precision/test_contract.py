"""What each value of the transformer step is stored and sent in, from the arrays and the
compiled CPU program; what `jax.default_matmul_precision("float32")` changes in it; and the
page's sentences about the compiled TPU and GPU steps."""

import collections
import re

import jax
import jax.numpy as jnp
import pytest

from docs_build.compiled import pages
from docs_build.compiled.results import family_of
from snippets.advanced.mixed_precision import contract
from snippets.hlo import read_collectives

# The compiled CPU step's products: (operand and result dtypes, precision or algorithm).
PRODUCTS = {
    ("bf16 x bf16 -> bf16", "default"): 26,
    ("bf16 x bf16 -> f32", "dot_bf16_bf16_f32"): 2,
    ("f32 x f32 -> f32", "dot_bf16_bf16_f32"): 2,
}
STEPS = ("transformer step, remat", "transformer step, no remat")


def test_the_arrays_are_float32_after_a_step(stored):
    (rows, state, (loss, grads)), printed = stored
    leaves = jax.tree.leaves
    assert {a.dtype for a in leaves(state["model"])} == {jnp.dtype("float32")}
    assert {a.dtype for a in leaves(grads)} == {jnp.dtype("float32")}
    adam = state["optimizer"]["opt_state"][0]
    moments = leaves((adam["mu"], adam["nu"]))
    assert {a.dtype for a in moments} == {jnp.dtype("float32")}
    # the step ran: the moments hold what the update wrote (mu and nu start at zero)
    assert any(bool(jnp.any(m != 0)) for m in moments)
    assert loss.dtype == jnp.float32
    assert jax.tree.structure(grads) == jax.tree.structure(state["model"])
    table = dict(rows)
    for value in ("parameters", "gradients", "Adam's mu and nu", "loss"):
        assert table[value] == "float32"
        assert re.search(rf"^{re.escape(value)}\s+float32$", printed, re.M)


def test_the_products_take_bfloat16_and_the_cpu_collectives_are_float32(
    stored, compiled_step
):
    (rows, _, _), _ = stored
    compiled = compiled_step[2]
    assert contract.matmuls(compiled) == PRODUCTS
    # The helper against the raw text: one match per dot, and every collective's result.
    text = compiled.as_text()
    assert len(re.findall(r"\sdot\(", text)) == sum(PRODUCTS.values())
    results = [c.result for c in read_collectives(compiled)]
    assert results and all(
        re.findall(r"\w+(?=\[)", r) == ["f32"] * r.count("[") for r in results
    )
    assert len(contract.collectives_in(compiled)) == len(results)
    assert contract.sent_in(compiled) == {"all-gather": ["f32"], "all-reduce": ["f32"]}
    assert ("each all-gather", "f32") in rows
    assert ("26 matmuls", "bf16 x bf16 -> bf16") in rows


def test_the_float32_products_are_the_attentions_backward_ones(compiled_step):
    """The only products with float32 operands name the bf16 algorithm and come from the
    backward pass of JAX's attention."""
    text = compiled_step[2].as_text()
    f32_dots = [
        line for line in text.splitlines() if " dot(" in line and "algorithm=" in line
    ]
    assert len(f32_dots) == 4
    assert all("algorithm=dot_bf16_bf16_f32" in line for line in f32_dots)
    ops = [re.search(r'op_name="([^"]*)"', line)[1] for line in f32_dots]
    assert all("BTNH,BSNH->BNTS" in op for op in ops)
    assert [op for op in ops if "transpose(" not in op] == [ops[0]]


def test_the_model_casts_weights_to_bfloat16_before_asking_for_them_whole():
    """ "although the model casts each weight to bfloat16 before asking for it whole":
    `use` constrains the cast weight, not the float32 one."""
    import inspect

    from snippets.advanced.transformer import model

    source = inspect.getsource(model.use)
    assert "constrain(param[...].astype(dtype), *whole)" in source
    assert inspect.signature(model.use).parameters["dtype"].default == jnp.bfloat16


def test_the_matmul_precision_changes_only_the_precision_the_products_ask(
    precise, compiled_step
):
    program, printed = precise
    compiled = compiled_step[2]
    changed = dict(PRODUCTS)
    changed[("bf16 x bf16 -> bf16", "highest")] = changed.pop(
        ("bf16 x bf16 -> bf16", "default")
    )
    assert contract.matmuls(program) == changed
    assert read_collectives(program) == read_collectives(compiled)
    assert "the same collectives, each in the same dtype: True" in printed

    def instructions(text):
        """Each instruction without its names and metadata."""
        found = collections.Counter()
        for line in text.splitlines():
            if " = " in line and not line.lstrip().startswith(("HloModule", "ENTRY")):
                line = re.sub(r", metadata=\{[^}]*\}|%[\w.-]+", "", line.strip())
                found[line] += 1
        return found

    before, after = instructions(compiled.as_text()), instructions(program.as_text())
    gone, new = before - after, after - before
    assert sum(gone.values()) == sum(new.values()) == 26
    assert all(" dot(" in line and "operand_precision" not in line for line in gone)
    assert all(line.endswith("operand_precision={highest,highest}") for line in new)


def test_the_prose_says_what_the_cpu_program_shows(prose):
    for phrase in (
        "The parameters, their gradients, both of Adam's moments and the loss are float32.",
        "the few with float32 operands are the attention's backward products",
        "rounding its operands to bfloat16 all the same",
        "Every collective of the CPU program is float32, the gathered weights included",
        "the bfloat16 products ask for `highest` precision of their operands, which stay "
        "bfloat16",
        "the attention's products keep their algorithm, and every collective is the same, "
        "in the same dtype: no dtype the code chose changed",
        "were compiled with the default setting only",
    ):
        assert phrase in prose, phrase


def test_the_tpu_and_gpu_programs_were_compiled_at_the_default_precision():
    """ "compiled with the default setting only": nothing in the compile driver sets it."""
    from pathlib import Path

    compiled = Path(pages.__file__).parent
    assert jax.config.jax_default_matmul_precision is None
    for source in compiled.glob("*.py"):
        assert "matmul_precision" not in source.read_text(encoding="utf-8"), source


def test_the_pages_dtype_claims_hold_for_both_steps(prose):
    """The page says which dtype the gathers and all-reduces travel in on each target; the
    generated table and sentence split the bytes sent by dtype and add up to every byte."""
    assert (
        "<!-- tpu-dtypes: transformer step, remat | transformer step, no remat -->"
        in prose
    )
    assert "<!-- tpu-dtypes-said: transformer step, remat -->" in prose
    data = pages.results()
    families = set()
    for name in STEPS:
        for target in data["advanced"]["targets"]:
            p = pages.advanced_program(target, name)
            sent = pages.dtype_bytes(p)
            assert sum(sent.values()) == pytest.approx(pages.wire_mib(p) * 2**20)
            gathered = pages.bf16_share(p, "all-gather")
            reduced = pages.bf16_share(p, "all-reduce")
            family = family_of(target)
            families.add(family)
            if family == "cpu":  # "the CPU sends every byte in float32"
                assert {d for _, d in sent} == {"f32"}
            elif family == "tpu":  # "most of the gathered ... and all-reduced bytes"
                assert gathered > 0.5 and reduced > 0.5
            else:  # "gathers mostly in float32 but all-reduces mostly in bfloat16"
                assert family == "gpu" and gathered < 0.5 < reduced
    assert families == {"cpu", "tpu", "gpu"}
    assert len([t for t in data["advanced"]["targets"] if family_of(t) == "tpu"]) == 2
    for phrase in (
        "on both TPU slices libtpu sends most of the gathered bytes and most of the "
        "all-reduced bytes in bfloat16, where the CPU sends every byte in float32",
        "The H100 program gathers mostly in float32 but all-reduces mostly in bfloat16",
    ):
        assert phrase in prose, phrase
    filled = pages.fill(" ".join(prose.split()))
    assert "<!-- tpu-dtypes" not in filled
    table = pages.dtypes_table(" | ".join(STEPS))
    assert table.count("| transformer step, ") == 2 * len(data["advanced"]["targets"])
    said = pages.dtypes_said(STEPS[0])
    for target in data["advanced"]["targets"]:
        assert f"on {target}" in said


def test_the_compiled_size_is_the_one_the_page_names(prose):
    """'about 168 million parameters': the model docs_build/compiled/advanced.py compiles,
    counted from its shapes by the transformer page's own formula."""
    from docs_build.compiled import advanced
    from snippets.advanced.transformer.model import param_count

    millions = round(param_count(advanced.TRANSFORMER) / 1e6)
    assert f"about {millions} million parameters, compiled for each target" in prose
