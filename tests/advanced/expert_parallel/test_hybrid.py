from collections import Counter

import jax
import numpy as np
import pytest

from snippets.advanced.expert_parallel import capacity as cap
from snippets.advanced.expert_parallel import hybrid, layer
from snippets.hlo import read_collectives

from .conftest import quietly

EXPERT_ROWS = [[0, 1, 2, 3], [4, 5, 6, 7]]  # the "expert" groups of the (2, 4) mesh
DATA_PAIRS = [[0, 4], [1, 5], [2, 6], [3, 7]]  # the "data" groups


@pytest.fixture(scope="module")
def grid(devices):
    return quietly(hybrid.hybrid_mesh)[0]


@pytest.fixture(scope="module")
def host(params):
    return jax.device_get(params)


@pytest.fixture(scope="module")
def trained(grid, params, tokens):
    return quietly(hybrid.train, grid, params, tokens)


def test_mesh_is_data_by_expert_and_device_i_j_holds_block_4i_plus_j(grid, tokens):
    assert dict(grid.shape) == {"data": 2, "expert": 4}
    assert np.asarray(grid.device_ids).tolist() == EXPERT_ROWS
    x = jax.device_put(tokens, jax.NamedSharding(grid, hybrid.TOKENS))
    for shard in x.addressable_shards:
        i, j = divmod(shard.device.id, 4)  # its row and column in the mesh
        assert shard.index[0] == slice(32 * (4 * i + j), 32 * (4 * i + j + 1))


def test_forward_matches_the_reference_with_a_group_per_device(
    grid, params, tokens, capsys
):
    out, want = hybrid.forward(grid, params, tokens)
    printed = capsys.readouterr().out.splitlines()
    assert printed == [
        f"fsdp={f}: (256, 16) P(('data', 'expert'), None), within 1e-05: True"
        for f in (False, True)
    ]
    np.testing.assert_allclose(out, want, atol=1e-5)
    assert (~np.asarray(out).any(axis=1)).sum() > 0  # a factor of 1 drops tokens here
    # Each of the 8 devices routes its own 32 tokens: groups=8. Grouping by data row
    # (2) or by expert column (4) drops other tokens.
    size = cap.capacity(32, 8, 1.0)
    for groups in (2, 4):
        other = cap.reference_moe(tokens, params, groups=groups, capacity=size)
        assert np.abs(other - want).max() > 1e-3


def test_one_device_moe_is_the_reference(params, tokens, host):
    for factor, limit in ((1.0, cap.capacity(32, 8, 1.0)), (8.0, None)):
        got = hybrid.one_device_moe(tokens, host, 8, factor)
        want = cap.reference_moe(tokens, params, groups=8, capacity=limit)
        np.testing.assert_allclose(got, want, atol=1e-5)


def test_step_gradients_match_one_device_and_sgd_updates(trained, host):
    (new, grads, want, _), printed = trained
    lines = printed.splitlines()
    assert (
        lines[0]
        == "fsdp=False: loss and gradients as on one device, within 1e-06: True"
    )
    assert (
        lines[4] == "fsdp=True: loss and gradients as on one device, within 1e-06: True"
    )
    assert lines[5:] == [
        "  grad router P(None, None)               per device (16, 8)",
        "  grad w_in   P('expert', None, 'data')   per device (2, 16, 16)",
        "  grad w_out  P('expert', 'data', None)   per device (2, 16, 16)",
    ]
    assert lines[2:4] == [
        "  grad w_in   P('expert', None, None)     per device (2, 16, 32)",
        "  grad w_out  P('expert', None, None)     per device (2, 32, 16)",
    ]
    for k in grads:  # the last step printed is FSDP's
        np.testing.assert_allclose(grads[k], want[k], atol=1e-6)
        np.testing.assert_allclose(new[k], host[k] - 0.1 * want[k], atol=1e-6)
        placed = jax.NamedSharding(new[k].sharding.mesh, hybrid.hybrid_specs(True)[k])
        assert new[k].sharding.is_equivalent_to(placed, new[k].ndim)
    assert max(np.abs(g).max() for g in jax.tree.leaves(want)) > 1e-3  # not all zero


@pytest.fixture(scope="module")
def programs(grid, params, tokens, trained):
    targets = trained[0][3]
    return quietly(hybrid.compiled_steps, grid, params, tokens, targets)


def kinds(program):
    return Counter((c.kind, c.group_size) for c in read_collectives(program))


def test_data_parallel_step_sums_expert_gradients_over_data(programs):
    (compiled, printed) = programs
    found = read_collectives(compiled[False])
    assert kinds(compiled[False]) == {
        ("all-to-all", 4): 3,  # two forward, one backward
        ("all-reduce", 8): 1,  # the router's gradient and the loss
        ("all-reduce", 2): 1,  # the experts' gradients, over "data"
    }
    for c in found:
        if (
            c.kind == "all-to-all"
        ):  # 4 pieces of 2 experts x C = 4 slots: (2, 4 * 4, 16)
            assert c.groups == EXPERT_ROWS
            assert c.result == "(" + ", ".join(["f32[2,4,16]"] * 4) + ")"
        if c.group_size == 8:  # the router's gradient and the loss
            assert c.result == "(f32[16,8], f32[])"
        if c.group_size == 2:
            assert c.groups == DATA_PAIRS
            assert c.result == "(f32[2,16,32], f32[2,32,16])"
    assert "all-reduce              2         8,192" in printed


def test_fsdp_step_gathers_and_reduce_scatters_over_data(programs):
    compiled, _ = programs
    assert kinds(compiled[True]) == {
        ("all-gather", 2): 2,
        ("all-to-all", 4): 3,
        ("all-reduce", 8): 1,
        ("reduce-scatter", 2): 2,
    }
    for c in read_collectives(compiled[True]):
        if c.group_size == 2:
            assert c.groups == DATA_PAIRS
        if c.kind == "reduce-scatter":
            assert c.result == "f32[2,16,16]"


def test_bad_input_says_what_to_change(grid, host, tokens):
    line = jax.make_mesh((8,), ("expert",))
    with pytest.raises(ValueError, match="it needs one named 'data'"):
        hybrid.place_hybrid(host, line, fsdp=False)
    other = jax.make_mesh((2, 4), ("data", "model"))
    with pytest.raises(ValueError, match="it needs one named 'expert'"):
        hybrid.place_hybrid(host, other, fsdp=False)
    six = layer.init_moe(jax.random.key(0), 16, 32, experts=6)
    with pytest.raises(ValueError, match="use a multiple of 4 experts"):
        hybrid.place_hybrid(six, grid, fsdp=False)
    odd = layer.init_moe(jax.random.key(0), 16, 33, experts=8)
    hybrid.place_hybrid(odd, grid, fsdp=False)  # copied over "data": any d_hidden
    with pytest.raises(ValueError, match="d_hidden that is a multiple of 2"):
        hybrid.place_hybrid(odd, grid, fsdp=True)
    with pytest.raises(ValueError, match="use a multiple of 8 tokens"):
        hybrid.hybrid_layer(grid, 1.0)(tokens[:252], host)


def test_the_forward_pass_holds_two_of_the_steps_three_all_to_alls(
    grid, params, tokens
):
    x = jax.device_put(tokens, jax.NamedSharding(grid, hybrid.TOKENS))
    for fsdp in (False, True):
        placed = hybrid.place_hybrid(params, grid, fsdp)
        layer_ = jax.jit(hybrid.hybrid_layer(grid, 1.0, fsdp))
        found = kinds(layer_.lower(x, placed).compile())
        gathers = {("all-gather", 2): 2} if fsdp else {}
        assert found == {("all-to-all", 4): 2, **gathers}


def test_the_pages_setup_sizes(params, tokens):
    """The page's setup note: eight experts of 16 features, hidden 32, and 256 tokens."""
    assert params["w_in"].shape == (8, 16, 32) and params["w_out"].shape == (8, 32, 16)
    assert tokens.shape == (256, 16)
