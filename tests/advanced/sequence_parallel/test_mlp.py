import jax
import numpy as np
import pytest
from jax import P

from docs_build import hlo
from snippets.advanced.sequence_parallel import mlp
from tests.advanced.sequence_parallel.conftest import quietly


def block_numpy(x, w1, w2):
    x, w1, w2 = (np.asarray(a, np.float64) for a in (x, w1, w2))
    normed = (x - x.mean(axis=1, keepdims=True)) / np.sqrt(
        x.var(axis=1, keepdims=True) + 1e-6
    )
    return x + np.maximum(normed @ w1, 0) @ w2


@pytest.fixture(scope="module")
def both(devices):
    return quietly(mlp.run_both)


@pytest.fixture(scope="module")
def programs(both):
    mesh, _, placed, _ = both[0]
    return quietly(mlp.compare_programs, mesh, placed)


def test_the_block_on_one_device_is_the_formula(both):
    _, (x, w1, w2), _, _ = both[0]
    np.testing.assert_allclose(
        mlp.mlp_block(x, w1, w2), block_numpy(x, w1, w2), atol=1e-5
    )


def test_both_layouts_compute_the_block(both):
    _, (x, w1, w2), placed, (tp_out, sp_out) = both[0]
    expected = block_numpy(x, w1, w2)
    np.testing.assert_allclose(tp_out, expected, atol=1e-5)
    np.testing.assert_allclose(sp_out, expected, atol=1e-5)
    x_whole, x_split, w1_cols, w2_rows = placed
    assert x_whole.sharding.spec == P() and tp_out.sharding.spec == P(None, None)
    assert x_split.sharding.spec == sp_out.sharding.spec == P("model", None)
    assert {s.data.shape for s in tp_out.addressable_shards} == {(64, 16)}
    assert {s.data.shape for s in sp_out.addressable_shards} == {(8, 16)}
    assert {s.data.shape for s in w1_cols.addressable_shards} == {(16, 8)}
    assert {s.data.shape for s in w2_rows.addressable_shards} == {(8, 16)}


def test_the_printed_table(both):
    lines = both[1].splitlines()
    assert lines[0].split() == ["result", "device", "0", "bytes", "within", "1e-05"]
    tp, sp = (line.split() for line in lines[1:])
    assert tp[:6] == ["tensor", "parallel", "float32[64,16]", "(64,", "16)", "4096"]
    assert sp[:6] == [
        "sequence",
        "parallel",
        "float32[64@model,16]",
        "(8,",
        "16)",
        "512",
    ]
    assert tp[-1] == sp[-1] == "True"


def test_an_all_reduce_becomes_an_all_gather_and_a_reduce_scatter(programs):
    counts, printed = programs
    assert counts == {
        "tensor parallel": {"all-reduce": 1},
        "sequence parallel": {"all-gather": 1, "reduce-scatter": 1},
    }
    table = [line.split() for line in printed.splitlines()]
    assert table == [
        ["tensor", "parallel", "sequence", "parallel"],
        ["all-gather", "0", "1"],
        ["all-reduce", "1", "0"],
        ["reduce-scatter", "0", "1"],
    ]


def test_what_each_collective_carries_and_the_bytes_by_the_ring_model(both):
    """CPU backend: the all-reduce carries the whole output; the gather returns the whole
    normalised input, the scatter leaves each device its rows; the wire bytes agree."""
    mesh, _, (x_whole, x_split, w1_cols, w2_rows), _ = both[0]
    tp = jax.jit(mlp.tp_block, static_argnums=3).lower(x_whole, w1_cols, w2_rows, mesh)
    sp = jax.jit(mlp.sp_block, static_argnums=3).lower(x_split, w1_cols, w2_rows, mesh)
    tp = hlo.read(tp.compile().as_text()).collectives
    sp = {c.kind: c for c in hlo.read(sp.compile().as_text()).collectives}
    assert [(c.kind, c.shapes) for c in tp] == [("all-reduce", ("f32[64,16]",))]
    assert sp["all-gather"].shapes == ("f32[64,16]",)
    assert sp["reduce-scatter"].shapes == ("f32[8,16]",)
    assert hlo.wire_bytes(tp[0]) == sum(hlo.wire_bytes(c) for c in sp.values())


def test_the_blocks_say_what_to_change(both, seq_mesh):
    mesh, (x, w1, w2), _, _ = both[0]
    with pytest.raises(ValueError, match="needs a mesh axis 'model'"):
        mlp.tp_block(x, w1, w2, seq_mesh)
    with pytest.raises(
        ValueError, match=r"12 tokens and a hidden size of 64 .* multiples of 8"
    ):
        mlp.sp_block(x[:12], w1, w2, mesh)
    with pytest.raises(ValueError, match="hidden size of 20 must both split"):
        mlp.tp_block(x, w1[:, :20], w2[:20], mesh)
