"""What each value of the transformer step is stored and sent in, from the arrays and the
compiled CPU program; and what `jax.default_matmul_precision("float32")` changes in it."""

import collections
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

from snippets.advanced.transformer import precision
from snippets.hlo import read_collectives
from tests.advanced.transformer.printed import quietly

PAGE = Path(__file__).resolve().parents[3] / "docs" / "advanced" / "transformer.md"
# The compiled CPU step's products: (operand and result dtypes, precision or algorithm).
PRODUCTS = {
    ("bf16 x bf16 -> bf16", "default"): 26,
    ("bf16 x bf16 -> f32", "dot_bf16_bf16_f32"): 2,
    ("f32 x f32 -> f32", "dot_bf16_bf16_f32"): 2,
}


@pytest.fixture(scope="module")
def stored(sharded, mesh, state, batches, compiled_step):
    """((rows, (loss, grads)), printed)."""
    return quietly(
        precision.stored_and_sent, sharded, mesh, state, batches, compiled_step[2]
    )


@pytest.fixture(scope="module")
def precise(sharded, mesh, compiled_step):
    """(the step compiled under default_matmul_precision("float32"), printed)."""
    _, tokens_spec, compiled = compiled_step
    return quietly(precision.matmul_precision, sharded, mesh, tokens_spec, compiled)


@pytest.fixture(scope="module")
def prose():
    return " ".join(PAGE.read_text().split())


def test_the_arrays_are_float32(stored, state):
    (rows, (loss, grads)), printed = stored
    leaves = jax.tree.leaves
    assert {a.dtype for a in leaves(state["model"])} == {jnp.dtype("float32")}
    assert {a.dtype for a in leaves(grads)} == {jnp.dtype("float32")}
    adam = state["optimizer"]["opt_state"][0]
    assert {a.dtype for a in leaves((adam["mu"], adam["nu"]))} == {jnp.dtype("float32")}
    assert loss.dtype == jnp.float32
    # The gradients are of every parameter, and the table says what the arrays are.
    assert jax.tree.structure(grads) == jax.tree.structure(state["model"])
    table = dict(rows)
    for value in ("parameters", "gradients", "Adam's mu and nu", "loss"):
        assert table[value] == "float32"
        assert re.search(rf"^{re.escape(value)}\s+float32$", printed, re.M)


def test_the_products_take_bfloat16_and_the_cpu_collectives_are_float32(
    stored, compiled_step
):
    (rows, _), _ = stored
    compiled = compiled_step[2]
    assert precision.matmuls(compiled) == PRODUCTS
    # The helper against the raw text: one match per dot, and every collective's result.
    text = compiled.as_text()
    assert len(re.findall(r"\sdot\(", text)) == sum(PRODUCTS.values())
    results = [c.result for c in read_collectives(compiled)]
    assert results and all(
        re.findall(r"\w+(?=\[)", r) == ["f32"] * r.count("[") for r in results
    )
    assert precision.sent_in(compiled) == {"all-gather": ["f32"], "all-reduce": ["f32"]}
    assert ("each all-gather", "f32") in rows and (
        "26 matmuls",
        "bf16 x bf16 -> bf16",
    ) in rows


def test_the_float32_products_are_the_attentions_backward_ones(compiled_step):
    """The only products with float32 operands name the bf16 algorithm and come from the
    backward pass of JAX's attention."""
    text = compiled_step[2].as_text()
    f32_dots = [
        line for line in text.splitlines() if " dot(" in line and "algorithm=" in line
    ]
    assert len(f32_dots) == 4
    assert all("algorithm=dot_bf16_bf16_f32" in line for line in f32_dots)
    # Their metadata names the operation: the scores einsum of JAX's attention, and for
    # the ones with float32 operands its transpose (the backward pass).
    ops = [re.search(r'op_name="([^"]*)"', line)[1] for line in f32_dots]
    assert all("BTNH,BSNH->BNTS" in op for op in ops)
    assert [op for op in ops if "transpose(" not in op] == [ops[0]]
    f32_operands = {(k, n) for (k, _), n in PRODUCTS.items() if k.startswith("f32")}
    assert f32_operands == {("f32 x f32 -> f32", 2)}


def test_the_matmul_precision_changes_only_the_precision_the_products_ask(
    precise, compiled_step
):
    program, printed = precise
    compiled = compiled_step[2]
    changed = dict(PRODUCTS)
    changed[("bf16 x bf16 -> bf16", "highest")] = changed.pop(
        ("bf16 x bf16 -> bf16", "default")
    )
    assert precision.matmuls(program) == changed
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


def test_the_prose_says_what_the_programs_show(prose):
    assert "Every collective of the CPU program is float32" in prose
    assert "rounding its operands to bfloat16 all the same" in prose
    assert (
        "the attention's products keep their algorithm, and every collective is the same"
        in prose
    )
    assert "were compiled with the default setting only" in prose
