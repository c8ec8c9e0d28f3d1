"""The remat page: each policy's residuals against the per-layer formula (to the byte), the
compiled CPU step's temporaries against policy_temp_bytes, the page's claims about the
table, and bad input refused."""

import dataclasses

import pytest

from docs_build import planner as pl
from docs_build import transformer_cost as tc
from snippets.advanced.remat import policies
from snippets.advanced.transformer.model import Config

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


def test_the_page_prints_the_table(table, capsys):
    policies.print_table(table)
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines[2:]] == [
        repr(p) for p in policies.PAGE_POLICIES
    ]
    assert lines[2].endswith("1.000x")


def test_without_remat_a_layer_keeps_32_arrays_and_with_it_its_input(devices, capsys):
    policies.show_residuals(Config())
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
