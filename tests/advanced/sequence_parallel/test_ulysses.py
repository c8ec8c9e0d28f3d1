import re
from pathlib import Path

import jax
import numpy as np
import pytest
from jax import P
from jax.sharding import AxisType, NamedSharding

from docs_build import hlo
from snippets.advanced.sequence_parallel import ulysses
from snippets.hlo import count_collectives
from tests.advanced.sequence_parallel.conftest import quietly, reference

PAGE = (
    Path(__file__).resolve().parents[3] / "docs" / "advanced" / "sequence-parallel.md"
)


def reference_heads(q, k, v, causal=False):
    """Attention per head in float64 NumPy: (positions, heads, d) arrays."""
    heads = [reference(q[:, h], k[:, h], v[:, h], causal) for h in range(q.shape[1])]
    return np.stack(heads, axis=1)


@pytest.fixture(scope="module")
def heads(seq_mesh):
    """The page's eight heads, whole and split over "seq", and what the block printed."""
    return quietly(ulysses.make_heads, NamedSharding(seq_mesh, P("seq")))


@pytest.fixture(scope="module")
def program(heads, seq_mesh):
    return quietly(ulysses.ulysses_program, *heads[0][1], seq_mesh)


@pytest.fixture(scope="module")
def table():
    return quietly(ulysses.print_bytes)


def test_the_heads_are_split_over_the_positions(heads):
    ((qh, _, _), (qh_seq, _, _)), printed = heads
    assert qh.shape == (64, 8, 16)
    assert qh_seq.sharding.spec == P("seq")
    for shard in qh_seq.addressable_shards:
        d = shard.device.id
        np.testing.assert_array_equal(shard.data, qh[8 * d : 8 * d + 8])
    assert printed == "float32[64@seq,8,16] per device: (8, 8, 16)\n"


@pytest.mark.parametrize("causal", [False, True])
def test_ulysses_is_attention_per_head(heads, seq_mesh, causal):
    (whole, placed), _ = heads
    out = ulysses.ulysses_attention(*placed, seq_mesh, causal=causal)
    np.testing.assert_allclose(out, reference_heads(*whole, causal), atol=1e-6)
    assert str(jax.typeof(out)) == "float32[64@seq,8,16]"
    assert {s.data.shape for s in out.addressable_shards} == {(8, 8, 16)}


def test_the_page_prints_agreement_with_one_device_and_the_ring(heads, seq_mesh):
    (whole, placed), _ = heads
    (uly, ring, one), printed = quietly(ulysses.run_ulysses, *whole, *placed, seq_mesh)
    np.testing.assert_allclose(uly, reference_heads(*whole, True), atol=1e-6)
    np.testing.assert_allclose(ring, reference_heads(*whole, True), atol=1e-6)
    np.testing.assert_allclose(one, reference_heads(*whole, True), atol=1e-6)
    assert printed.splitlines() == [
        f"causal={c!s:<5} float32[64@seq,8,16]  within 1e-05 of one device: True, "
        "of the ring: True"
        for c in (False, True)
    ]


@pytest.mark.parametrize(("n", "positions", "heads"), [(4, 12, 4), (2, 6, 6)])
def test_ulysses_reads_its_size_from_the_mesh(n, positions, heads):
    mesh = jax.make_mesh(
        (n,), ("seq",), axis_types=(AxisType.Explicit,), devices=jax.devices()[:n]
    )
    rng = np.random.default_rng(n)
    q, k, v = rng.standard_normal((3, positions, heads, 5)).astype(np.float32)
    split = NamedSharding(mesh, P("seq"))
    args = [jax.device_put(a, split) for a in (q, k, v)]
    for causal in (False, True):
        out = ulysses.ulysses_attention(*args, mesh, causal=causal)
        np.testing.assert_allclose(out, reference_heads(q, k, v, causal), atol=1e-6)


def test_the_program_holds_four_all_to_alls_over_every_device(program, seq_mesh):
    compiled, printed = program
    n = seq_mesh.shape["seq"]
    assert count_collectives(compiled) == {"all-to-all": 4}
    assert printed == "all-to-all          4\n"
    found = hlo.read(compiled.as_text()).collectives
    assert len(found) == 4
    for a2a in found:  # the page: eight operands of f32[8,1,16], one per device
        assert a2a.shapes == ("f32[8,1,16]",) * n
        assert a2a.groups == (tuple(range(n)),)


def test_each_device_computes_whole_sequences_of_its_heads(program, heads, seq_mesh):
    """The page: a (64 x 64) matrix of scores per Ulysses device, (8 x 8) blocks for
    each of eight heads in the ring: n times fewer scores at once."""
    text = program[0].as_text()
    assert "f32[1,64,64]" in text
    ring = jax.jit(ulysses.per_head(ulysses.ring_attention, mesh=seq_mesh))
    ring_text = ring.lower(*heads[0][1]).compile().as_text()
    assert "f32[8,8,8]" in ring_text
    assert not re.search(r"\[(?:\d+,)*64(?:,\d+)*\]", ring_text)
    n = seq_mesh.shape["seq"]
    assert n == (1 * 64 * 64) / (8 * 8 * 8)


def test_bytes_satisfy_the_formulas(table):
    sent_table, printed = table
    assert set(sent_table) == {(64, 2), (64, 4), (64, 8), (128, 8)}
    for (positions, n), (block, ring_b, uly_b) in sent_table.items():
        assert block == positions * 8 * 16 * 4 / n  # S·H·d·4/n
        assert ring_b == 2 * (n - 1) * block
        assert uly_b == 4 * (n - 1) / n * block
        assert ring_b / uly_b == n / 2
        assert ring_b < 2 * positions * 8 * 16 * 4  # below twice one whole tensor
    assert sent_table[64, 2][1] == sent_table[64, 2][2]  # equal on two devices
    assert sent_table[128, 8][1:] == tuple(2 * b for b in sent_table[64, 8][1:])
    lines = printed.splitlines()
    assert lines[0].split() == [
        "positions",
        "devices",
        "block",
        "B",
        "ring",
        "sends",
        "Ulysses",
        "sends",
        "ring/Ulysses",
    ]
    rows = [[float(x.replace(",", "")) for x in line.split()] for line in lines[1:]]
    for (positions, n, block, ring_b, uly_b, ratio), key in zip(
        rows, sent_table, strict=True
    ):
        assert (positions, n) == key
        assert (block, ring_b, uly_b) == sent_table[key]
        assert ratio == n / 2


def test_bytes_sent_refuses_a_loop_without_a_trip_count():
    text = """HloModule m, num_partitions=8
%body (p: f32[8]) -> f32[8] {
  %p = f32[8] parameter(0)
  ROOT %a = f32[8] all-to-all(%p), replica_groups={}, dimensions={0}
}
ENTRY %main (x: f32[8]) -> f32[8] {
  %x = f32[8] parameter(0)
  ROOT %w = f32[8] while(%x), body=%body, condition=%body
}
"""
    with pytest.raises(ValueError, match="No trip count for all-to-all"):
        ulysses.bytes_sent(text)


def test_ulysses_says_what_to_change(heads, mesh, seq_mesh):
    placed = heads[0][1]
    with pytest.raises(ValueError, match="a 1-D mesh with one axis 'seq'"):
        ulysses.ulysses_attention(*placed, mesh)
    six_heads = np.zeros((64, 6, 16), np.float32)
    with pytest.raises(
        ValueError,
        match=r"64 positions and 6 heads: use multiples of 8, a 'seq' axis whose "
        r"size divides both, or ring attention",
    ):
        ulysses.ulysses_attention(six_heads, six_heads, six_heads, seq_mesh)
    odd = np.zeros((12, 8, 16), np.float32)
    with pytest.raises(ValueError, match="12 positions and 8 heads"):
        ulysses.ulysses_attention(odd, odd, odd, seq_mesh)
    one_head = np.zeros((64, 16), np.float32)
    with pytest.raises(ValueError, match=r"must be \(positions, heads, d\)"):
        ulysses.ulysses_attention(one_head, one_head, one_head, seq_mesh)


def test_the_prose_describes_what_the_code_does():
    text = " ".join(PAGE.read_text().replace("\u2212", "-").split())
    assert "Four all-to-alls and nothing else" in text
    assert "eight operands of f32[8,1,16]" in text
    assert "in the ring, 2(*n* - 1)·*B*" in text
    assert "in Ulysses, 4·(*n* - 1)/*n*·*B*" in text
    assert "so the ratio is *n*/2" in text
