"""The remat page: each policy's residuals against the per-layer formula (to the byte), the
compiled CPU step's temporaries against policy_temp_bytes, the page's claims about the
table, and bad input refused."""

import dataclasses
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

from docs_build import planner as pl
from docs_build import transformer_cost as tc
from snippets.advanced.remat import policies
from snippets.advanced.transformer.model import Config

PAGE = Path(__file__).resolve().parents[3] / "docs" / "advanced" / "remat.md"
SMALL = dict(vocab=64, d_model=32, heads=4, mlp=128, layers=2, seq=16)


@pytest.mark.parametrize("policy", tc.POLICIES, ids=repr)
@pytest.mark.parametrize(
    "options", [{}, {"kv_heads": 2, "gated": True, "mlp": 96}], ids=["page", "gqa"]
)
def test_the_formula_is_what_print_saved_residuals_lists(devices, policy, options):
    cfg = Config(**{**SMALL, **options})
    layer, params, x = policies.one_block(cfg, batch=2)
    device, host = policies.residual_bytes(
        policies.residuals(policies.saved(layer, policy), params, x)
    )
    model = pl.Model.from_config(cfg, batch=2)
    one = pl.Layout("one device")
    assert device == sum(tc.policy_residuals(model, one, policy).values())
    assert host == sum(tc.offloaded_residuals(model, one, policy).values())


@pytest.fixture(scope="module")
def table(devices):
    from snippets.advanced.transformer.init import build_mesh

    return policies.policy_table(Config(), build_mesh())


def test_every_policy_lies_between_no_remat_and_full_remat(table):
    none, full = table[False], table[True]
    for policy, (device, _, temp, flops) in table.items():
        assert full[0] <= device <= none[0], policy
        assert full[2] <= temp <= none[2], policy
        assert none[3] <= flops <= full[3], policy
    # the CPU's host memory is its memory: offloading leaves the temporaries of "names"
    assert table["offload"][2] == table["names"][2]
    assert table["offload"][1] > 0 and table["names"][1] == 0


def test_policy_temp_bytes_hold_to_the_compiled_cpu_step(table):
    model = pl.Model.from_config(Config(), batch=8)
    layout = pl.Layout("page", data=2, fsdp=2, tensor=2)
    for policy, (_, _, temp, _) in table.items():
        if policy is False:  # temp_bytes, held to the grid (tests/docs_build)
            continue
        formula = tc.policy_temp_bytes(model, layout, policy, "cpu")
        gap = formula / temp - 1
        assert abs(gap) <= tc.POLICY_TOLERANCE["cpu"], (policy, formula, temp)
        assert abs(gap) < 0.04, (policy, gap)  # the page: "within 4 %"


def test_the_page_prints_the_table(table, capsys):
    policies.print_table(table)
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines[2:]] == [
        repr(p) for p in policies.PAGE_POLICIES
    ]
    assert lines[2].endswith("1.000x")


def test_without_remat_a_layer_keeps_32_arrays_and_with_it_its_input(devices, capsys):
    policies.show_residuals()
    out = capsys.readouterr().out
    assert "remat=False: 32 arrays" in out
    assert (
        "remat=True: 1 arrays, 4,096 bytes\n  f32[2,16,32] from the argument x" in out
    )
    assert "/" not in out  # no source locations


def test_bad_policies_and_sizes_are_refused():
    with pytest.raises(ValueError, match="remat must be True, False, one of"):
        Config(remat="dot")
    with pytest.raises(ValueError, match="batch must be a positive integer"):
        policies.one_block(Config(), batch=0)
    model = pl.Model.from_config(Config(), batch=8)
    with pytest.raises(tc.CostModelError, match="policy must be one of"):
        tc.policy_residuals(model, pl.Layout("one device"), "everything")
    with pytest.raises(tc.CostModelError, match="policy must be one of"):
        tc.offloaded_residuals(model, pl.Layout("one device"), "dot")
    assert dataclasses.replace(Config(), remat="names").remat == "names"


def test_the_page_names_every_policy_it_leaves_out():
    """ "the main policies ...; it leaves out ...": every public policy of this JAX is either
    on the page (its Config.remat name, or an alias of one) or named as left out."""
    from snippets.advanced.transformer.model import REMAT_POLICIES

    text = " ".join(PAGE.read_text().split())
    left_out = re.search(r"it leaves out (.*?)\.", text).group(1)
    shown = {"nothing_saveable", "dots_saveable", "dots_with_no_batch_dims_saveable"}
    shown |= {"save_only_these_names", "save_and_offload_only_these_names"}
    aliases = {"checkpoint_dots", "checkpoint_dots_with_no_batch_dims"}
    public = {n for n in dir(jax.checkpoint_policies) if not n.startswith("_")}
    named = set(re.findall(r"`(\w+)`", left_out))
    assert public == shown | aliases | named and not named & shown
    assert jax.checkpoint_policies.checkpoint_dots is REMAT_POLICIES["dots"]
    assert "JAX 0.12.0.1" in text and jax.__version__ == "0.12.0.1"


def test_without_remat_the_mlps_hidden_layer_is_kept_five_times(devices):
    """ "the MLP's hidden layer five times over": (batch, seq, mlp) arrays in the listing."""
    cfg = Config()
    layer, params, x = policies.one_block(cfg)
    lines = policies.residuals(policies.saved(layer, False), params, x)
    assert sum(f"[2,{cfg.seq},{cfg.mlp}]" in line for line in lines) == 5
    text = " ".join(PAGE.read_text().split())
    assert "the MLP's hidden layer five times over" in text


def test_offload_leaves_no_host_buffer_in_the_cpu_program(devices):
    """The lowered step marks the tagged tensors for the host; the compiled CPU program has
    no host-memory buffer (memory space S(5)) and no placement left."""
    from snippets.advanced.transformer.init import build_mesh, sharded_init
    from snippets.advanced.transformer.step import (
        make_train_step,
        shard_batch,
        token_batches,
    )

    mesh = build_mesh()
    tokens = shard_batch(token_batches(Config(), steps=1, batch=8)[0], mesh)
    sharded = sharded_init(Config(remat="offload"), mesh)
    lowered = make_train_step(sharded, mesh).lower(sharded.abstract, tokens)
    assert "annotate_device_placement" in lowered.as_text()
    compiled = lowered.compile().as_text()
    assert "S(5)" not in compiled and "annotate_device_placement" not in compiled
    text = " ".join(PAGE.read_text().split())
    assert "the compiled one has no host-memory buffer" in text


def test_source_locations_are_cut_from_files_and_from_the_pages_blocks(devices):
    """The page's blocks run as `<python-input-N>`, a test's code from a file path."""
    code = compile(
        "def f(p, x):\n    return jnp.sin(x) * p\n", "<python-input-2>", "exec"
    )
    namespace = {"jnp": jnp}
    exec(code, namespace)
    lines = policies.residuals(namespace["f"], 1.0, jnp.ones(3))
    assert lines and not any("python-input" in line for line in lines), lines


def test_tpu_temporaries_are_left_unchecked_as_the_page_says():
    assert "tpu" not in tc.CHECKED and "v5e:2x4" in tc.UNCHECKED["tpu"]
    assert {"cpu": tc.POLICY_TOLERANCE["cpu"]} == tc.POLICY_TOLERANCE
