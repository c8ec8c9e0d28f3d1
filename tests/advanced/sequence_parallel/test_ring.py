import re
from pathlib import Path

import jax
import numpy as np
import pytest
from jax import P
from jax.sharding import AxisType, NamedSharding

from docs_build import hlo
from snippets.advanced.sequence_parallel import ring
from snippets.hlo import count_collectives
from tests.advanced.sequence_parallel.conftest import quietly, reference

PAGE = (
    Path(__file__).resolve().parents[3] / "docs" / "advanced" / "sequence-parallel.md"
)


@pytest.fixture(scope="module")
def compiled(placed, seq_mesh):
    return quietly(ring.ring_program, *placed[0], seq_mesh)


def test_the_mesh_is_one_explicit_axis_seq_of_eight(seq_mesh, devices):
    assert dict(seq_mesh.shape) == {"seq": 8}
    assert seq_mesh.axis_types == (AxisType.Explicit,)


def test_each_device_holds_one_block_of_positions(placed, qkv):
    (q_seq, k_seq, v_seq), printed = placed
    for placed_array, whole in zip((q_seq, k_seq, v_seq), qkv[0], strict=True):
        assert placed_array.sharding.spec == P("seq")
        for shard in placed_array.addressable_shards:
            d = shard.device.id
            np.testing.assert_array_equal(shard.data, whole[8 * d : 8 * d + 8])
    assert printed == "float32[64@seq,16] per device: (8, 16)\n"


@pytest.mark.parametrize("causal", [False, True])
def test_ring_attention_is_attention_split_over_seq(placed, qkv, seq_mesh, causal):
    out = ring.ring_attention(*placed[0], seq_mesh, causal=causal)
    np.testing.assert_allclose(out, reference(*qkv[0], causal), atol=1e-6)
    assert out.sharding.spec == P("seq", None)
    assert str(jax.typeof(out)) == "float32[64@seq,16]"
    assert {s.data.shape for s in out.addressable_shards} == {(8, 16)}


def test_the_page_prints_the_ring_results(placed, qkv, seq_mesh):
    out, printed = quietly(ring.run_ring, *qkv[0], *placed[0], seq_mesh)
    first, second = printed.splitlines()
    assert first == "float32[64@seq,16] per device: (8, 16)"
    assert second == "within 1e-05 of attention on one device: True"
    out, printed = quietly(ring.run_causal, *qkv[0], *placed[0], seq_mesh)
    np.testing.assert_allclose(out, reference(*qkv[0], True), atol=1e-6)
    first, second = printed.splitlines()
    assert first == "float32[64@seq,16]"
    assert second == "within 1e-05 of causal attention on one device: True"


@pytest.mark.parametrize(("devices", "positions", "d"), [(4, 24, 8), (2, 10, 3)])
def test_the_ring_reads_its_size_from_the_mesh(devices, positions, d):
    mesh = jax.make_mesh(
        (devices,),
        ("seq",),
        axis_types=(AxisType.Explicit,),
        devices=jax.devices()[:devices],
    )
    rng = np.random.default_rng(devices)
    q, k, v = rng.standard_normal((3, positions, d)).astype(np.float32)
    split = NamedSharding(mesh, P("seq"))
    args = [jax.device_put(a, split) for a in (q, k, v)]
    for causal in (False, True):
        out = ring.ring_attention(*args, mesh, causal=causal)
        np.testing.assert_allclose(out, reference(q, k, v, causal), atol=1e-6)


def test_the_program_moves_blocks_with_collective_permutes_only(compiled, seq_mesh):
    program, printed = compiled
    n = seq_mesh.shape["seq"]
    assert count_collectives(program) == {"collective-permute": 2 * (n - 1)}
    assert printed == f"collective-permute  {2 * (n - 1)}\n"
    ring_pairs = tuple((i, (i + 1) % n) for i in range(n))
    for permute in hlo.read(program.as_text()).collectives:
        assert permute.shapes == ("f32[8,16]",)  # one device's block of k or of v
        assert permute.groups == ring_pairs
        assert permute.runs == 1


def test_the_figure_follows_the_programs_permutes(compiled, seq_mesh):
    """The page's figure (docs_build.figures.ring_steps) reads the pairs from the compiled
    ring, and says what the prose says: at step k device i holds block (i - k) mod n."""
    from docs_build import figures

    program, _ = compiled
    n = seq_mesh.shape["seq"]
    pairs, held = figures.ring_holdings(program, seq_mesh)
    assert pairs == [(i, (i + 1) % n) for i in range(n)]
    assert held == [[(i - k) % n for i in range(n)] for k in range(n)]
    figure = figures.ring_steps(program, seq_mesh, "ring")
    lines = figure.text.splitlines()
    assert lines[1].endswith(" ".join(f"{i}→{(i + 1) % n}" for i in range(n)))
    assert lines[3] == f"step 1: devices 0-{n - 1} hold blocks " + " ".join(
        str((i - 1) % n) for i in range(n)
    )
    assert figure.svg.count("<path ") == n  # one line per block
    text = " ".join(PAGE.read_text().split())
    assert "at step *k* device *i* holds block (*i* \u2212 *k*) mod *n*" in text


def test_no_device_ever_holds_all_of_k_or_v(compiled):
    """The per-device program has no array as long as the whole sequence."""
    text = compiled[0].as_text()
    assert re.findall(r"\[(?:\d+,)*64(?:,\d+)*\]", text) == []
    assert "all-gather" not in text and "all-reduce" not in text


def test_ring_attention_says_what_to_change(placed, mesh, seq_mesh):
    with pytest.raises(ValueError, match="a 1-D mesh with one axis 'seq'"):
        ring.ring_attention(*placed[0], mesh)
    odd = np.zeros((12, 4), np.float32)
    with pytest.raises(ValueError, match="must split over the 8 devices"):
        ring.ring_attention(odd, odd, odd, seq_mesh)
    with pytest.raises(ValueError, match="q and k must have one shape"):
        ring.ring_attention(
            np.zeros((16, 4)), np.zeros((16, 2)), np.zeros((16, 4)), seq_mesh
        )


def test_layouts_give_each_device_its_positions():
    contiguous = ring.layout(64, 8)
    np.testing.assert_array_equal(contiguous, np.arange(64).reshape(8, 8))
    zigzag = ring.layout(64, 8, zigzag=True)
    assert zigzag.tolist()[0] == [0, 1, 2, 3, 60, 61, 62, 63]
    assert zigzag.tolist()[7] == [28, 29, 30, 31, 32, 33, 34, 35]
    assert sorted(zigzag.ravel()) == list(range(64))
    with pytest.raises(
        ValueError, match=r"do not cut into 16 equal chunks .* multiple of 16"
    ):
        ring.layout(40, 8, zigzag=True)


def causal_pairs_brute_force(held):
    return [sum(1 for q in row for k in range(64) if k <= q) for row in held]


@pytest.mark.parametrize("zigzag", [False, True])
def test_causal_work_counts_the_pairs_the_mask_keeps(zigzag):
    held = ring.layout(64, 8, zigzag)
    work = ring.causal_work(held)
    assert work.tolist() == causal_pairs_brute_force(held)
    assert work.sum() == 64 * 65 // 2
    assert (len(set(work.tolist())) == 1) == zigzag


def test_zigzag_keeps_half_of_every_block_after_the_first_hop():
    """The page: at every hop but the first, half of each block's scores survive."""
    n = 8
    held = ring.layout(64, n, zigzag=True)
    for device in range(n):
        for hop in range(1, n):
            keys = held[(device - hop) % n]
            kept = (keys[None, :] <= held[device][:, None]).mean()
            assert kept == 0.5
    contiguous = ring.layout(64, n)
    kept = [
        (contiguous[(0 - hop) % n][None, :] <= contiguous[0][:, None]).mean()
        for hop in range(1, n)
    ]
    assert kept == [0.0] * (n - 1)  # device 0: every block it receives is in the future


def test_the_balance_table(capsys):
    ring.print_balance()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "contiguous device 0 holds [0 1 2 3 4 5 6 7]"
    work = [int(x) for x in re.findall(r"\d+", lines[1].split("[")[1])]
    assert work == [64 * d + 36 for d in range(8)]  # 8d + 1 ... 8d + 8 keys each
    assert lines[2].startswith("zigzag     device 0 holds [ 0  1  2  3 60 61 62 63]")
    assert [int(x) for x in re.findall(r"\d+", lines[3].split("[")[1])] == [260] * 8


def test_the_prose_describes_what_the_code_does():
    text = " ".join(PAGE.read_text().split())
    assert "every device sends to the next, the last to the first" in text
    assert "Two permutes per hop, one for the keys and one for the values" in text
