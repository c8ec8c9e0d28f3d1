"""snippets.hlo: the collectives the pages read out of compiled programs.

On live CPU programs, and on the stored programs of tests/docs_build/fixtures: CPU and TPU
(compiled by `python -m docs_build.compiled.fixtures`) and GPU (8 H100s, compiled without a GPU
by `python -m docs_build.compiled.gpu_fixtures`). On every stored program the helper must agree with
the build's own reader, docs_build/hlo.py; what the TPU and GPU ones hold was also worked
out by hand from their text, and is asserted below.
"""

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from docs_build import hlo as reader
from snippets.hlo import (
    COLLECTIVES,
    count_collectives,
    print_collectives,
    read_collectives,
    replica_groups,
    shape_bytes,
)
from tests.docs_build.test_hlo import GPU_STYLE

FIXTURES = Path(__file__).resolve().parent / "docs_build" / "fixtures"
STORED = sorted(p.name for p in FIXTURES.glob("*.hlo"))
# The model of the stored training steps: MLP 1024 -> 4096 -> 1024, float32.
W = 4 * (1024 * 4096 * 2 + 4096 + 1024)  # bytes of all its weights: 33,574,912


def stored(name: str) -> str:
    return (FIXTURES / name).read_text()


def auto_mesh():
    return jax.make_mesh((8,), ("x",), axis_types=(AxisType.Auto,))


def test_a_sharded_contraction_needs_one_all_reduce():
    mesh = auto_mesh()
    a = jax.device_put(jnp.ones((8, 16)), NamedSharding(mesh, P(None, "x")))
    b = jax.device_put(jnp.ones((16, 4)), NamedSharding(mesh, P("x", None)))
    compiled = jax.jit(jnp.matmul).lower(a, b).compile()
    assert count_collectives(compiled) == {"all-reduce": 1}
    (c,) = read_collectives(compiled)
    # Each device's partial (8, 4) product, summed over all 8.
    assert (c.result, c.result_bytes, c.group_size) == ("f32[8,4]", 128, 8)
    assert c.groups == [list(range(8))] and c.wire_bytes == 2 * 7 / 8 * 128


def test_elementwise_work_needs_none(capsys):
    x = jax.device_put(jnp.ones((8, 4)), NamedSharding(auto_mesh(), P("x")))
    compiled = jax.jit(lambda v: 2 * jnp.sin(v) + 1).lower(x).compile()
    assert count_collectives(compiled) == {}
    print_collectives(compiled)
    assert capsys.readouterr().out == "collectives: none\n"


def test_a_program_on_one_device_has_none():
    compiled = jax.jit(lambda v: v + 1).lower(jnp.ones(3)).compile()
    assert read_collectives(compiled) == []


def test_gathering_a_sharded_array_is_an_all_gather(capsys):
    mesh = auto_mesh()
    x = jax.device_put(jnp.ones((8, 4)), NamedSharding(mesh, P("x")))
    gather = jax.jit(lambda v: v * 2, out_shardings=NamedSharding(mesh, P()))
    compiled = gather.lower(x).compile()
    assert count_collectives(compiled) == {"all-gather": 1}
    print_collectives(compiled)
    assert capsys.readouterr().out == "all-gather          1\n"
    print_collectives(compiled, per_collective=True)
    assert capsys.readouterr().out.splitlines() == [
        "collective          group  result bytes  sent (ring)  runs  result",
        "all-gather              8           128          112     1  f32[8,4]",
        "bytes per device; sent: by the ring model; runs: per call, ?: unknown",
    ]


def mapped(f, mesh, spec_in, spec_out, shape=(64, 16)):
    fn = jax.jit(jax.shard_map(f, mesh=mesh, in_specs=spec_in, out_specs=spec_out))
    x = jax.ShapeDtypeStruct(shape, jnp.float32, sharding=NamedSharding(mesh, spec_in))
    return fn.lower(x).compile()


def test_a_collective_in_a_loop_is_printed_once_and_runs_per_iteration():
    def f(x):
        def body(c, _):
            return c + jax.lax.psum(c, "x"), None

        return jax.lax.scan(body, x, None, length=4)[0]

    compiled = mapped(f, auto_mesh(), P("x"), P("x"))
    assert count_collectives(compiled) == {"all-reduce": 1}
    (c,) = read_collectives(compiled)
    assert c.runs == 4  # the scan's trip count, which CPU prints


def test_a_collective_in_a_branch_runs_an_unknown_number_of_times():
    def f(x):
        return jax.lax.cond(
            jnp.sum(x) > 0, lambda c: c + jax.lax.psum(c, "x"), lambda c: c, x
        )

    compiled = mapped(f, auto_mesh(), P("x"), P("x"))
    assert " conditional(" in compiled.as_text()
    (c,) = read_collectives(compiled)
    assert c.runs is None  # once, or not at all


@pytest.mark.parametrize("axes", ["x", "y", ("x", "y"), ("y", "x")])
def test_mesh_groups_are_the_devices_that_sum_together(axes):
    """Each device adds up its group's positions: the groups must say the same."""
    mesh = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2)

    def f(x):
        return x + jax.lax.psum(jax.lax.axis_index(("x", "y")).astype(x.dtype), axes)

    fn = jax.jit(
        jax.shard_map(f, mesh=mesh, in_specs=P(("x", "y")), out_specs=P(("x", "y")))
    )
    compiled = fn.lower(jnp.zeros(8)).compile()
    assert "replica_groups=mesh[" in compiled.as_text()
    (c,) = read_collectives(compiled)
    sums = np.asarray(fn(jnp.zeros(8)))
    assert sorted(p for group in c.groups for p in group) == list(range(8))
    for group in c.groups:
        assert [sums[p] for p in group] == [sum(group)] * len(group)


# ---------------------------------------------------------------- spellings


def test_replica_groups_in_every_spelling():
    assert replica_groups("replica_groups={{0,1},{2,3}}", 4) == [[0, 1], [2, 3]]
    assert replica_groups("replica_groups={}, to_apply=%add", 4) == [[0, 1, 2, 3]]
    assert replica_groups("replica_groups=[2,4]<=[8]", 8) == [
        [0, 1, 2, 3],
        [4, 5, 6, 7],
    ]
    # ids 0..7 as a 2x4 grid, transposed: its columns
    assert replica_groups("replica_groups=[4,2]<=[2,4]T(1,0), x=1", 8) == [
        [0, 4],
        [1, 5],
        [2, 6],
        [3, 7],
    ]
    mesh = "replica_groups=mesh['x'=2,'y'=4]"
    assert replica_groups(f"{mesh} {{'y'}}", 8) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert replica_groups(f"{mesh} {{'x'}}", 8) == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert replica_groups(f"{mesh} {{'x','y'}}", 8) == [list(range(8))]
    assert replica_groups(f"{mesh} {{'y','x'}}", 8) == [[0, 4, 1, 5, 2, 6, 3, 7]]
    # names the partitioner makes up for a mesh it built itself
    assert replica_groups("replica_groups=mesh['axis_0'=8] {'axis_0'}", 8) == [
        list(range(8))
    ]
    assert replica_groups("source_target_pairs={{0,1},{1,0}}", 2) == [[0, 1], [1, 0]]


def test_mesh_sub_axes_and_device_orders_as_xla_documents_them():
    """The cases tests/docs_build/test_hlo.py holds the build's reader to."""
    mesh8 = "replica_groups=mesh['a'=8]"
    # For mesh<"a"=8>, {a:(1)2} reshapes [8] to [1,2,4] and groups over the 2.
    assert replica_groups(f"{mesh8} {{'a':(1)2}}", 8) == [
        [0, 4],
        [1, 5],
        [2, 6],
        [3, 7],
    ]
    assert replica_groups(f"{mesh8} {{'a':(2)2}}", 8) == [
        [0, 2],
        [1, 3],
        [4, 6],
        [5, 7],
    ]
    assert replica_groups(f"{mesh8} {{'a':(1)2,'a':(4)2}}", 8) == [
        [0, 1, 4, 5],
        [2, 3, 6, 7],
    ]
    mesh = "replica_groups=mesh['x'=2,'y'=2], device_ids="
    assert replica_groups(f"{mesh}(0,2,1,3) {{'y'}}", 4) == [[0, 2], [1, 3]]
    assert replica_groups(f"{mesh}([2,2]<=[2,2]T(1,0)) {{'x'}}", 4) == [[0, 1], [2, 3]]


def test_groups_it_cannot_read_raise_instead_of_guessing():
    with pytest.raises(ValueError, match="replica groups this helper cannot read"):
        replica_groups("channel_id=1, to_apply=%add", 8)


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        ("f32[4096,128]{1,0:T(8,128)S(1)}", 4096 * 128 * 4),
        ("(f32[], bf16[1024]{0}, /*index=2*/s32[2]{0:S(4)})", 4 + 2048 + 8),
        ("pred[3]", 3),
        ("s4[3]", 2),  # 12 bits round up
    ],
)
def test_bytes_of_tuples_layouts_and_packed_types(shape, expected):
    assert shape_bytes(shape) == expected


# ---------------------------------------------------------------- stored programs


def as_read_by_the_build(text: str) -> list[tuple]:
    rows = []
    for c in reader.read(text).collectives:
        groups = [list(g) for g in c.groups] or [list(range(c.group_size))]
        result = c.shapes[0] if len(c.shapes) == 1 else f"({', '.join(c.shapes)})"
        wire = reader.wire_bytes(c)
        rows.append(
            (c.kind, result, c.result_bytes, groups, c.group_size, wire, c.runs)
        )
    return sorted(rows, key=by_record)


def by_record(c: tuple) -> tuple:
    """Sort order for both readers' rows: what they read, then runs, an unknown count
    (None) last, so that a program whose equal collectives run inside a loop and outside
    it (libtpu's collective matmul) still sorts."""
    return (list(c[:6]), c[6] is None, c[6] or 0)


# The page's helper counts the collectives a CPU program can hold (COLLECTIVES). A ragged
# all-to-all compiles only for TPU and GPU (the CPU backend has no code for it), so the
# stored program that holds one is read by the build's reader alone
# (tests/docs_build/test_hlo.py).
BEYOND_THE_HELPER = {"gpu_h100x8_ragged_dispatch.hlo"}


def test_only_the_programs_of_kinds_the_helper_does_not_count_are_left_out():
    for name in STORED:
        kinds = {c.kind for c in reader.read(stored(name)).collectives}
        assert (name in BEYOND_THE_HELPER) == bool(kinds - set(COLLECTIVES)), name


@pytest.mark.parametrize("name", sorted(set(STORED) - BEYOND_THE_HELPER))
def test_it_agrees_with_the_builds_reader_on_every_stored_program(name):
    text = stored(name)
    mine = sorted(read_collectives(text), key=by_record)
    theirs = as_read_by_the_build(text)
    assert [c[:6] for c in mine] == [c[:6] for c in theirs]
    # Runs as the build counts them, but where a loop's trip count is not printed
    # (TPU): the build reads it off the loop's counter, the helper says None.
    for c, row in zip(mine, theirs, strict=True):
        assert c.runs == row[6] or (c.runs is None and "known_trip_count" not in text)


def test_stored_programs_cover_every_backend_and_kind():
    assert {name.split("_")[0] for name in STORED} == {"cpu", "gpu", "tpu"}
    kinds = {c.kind for name in STORED for c in read_collectives(stored(name))}
    assert kinds == {
        "all-reduce",
        "all-gather",
        "reduce-scatter",
        "all-to-all",
        "collective-permute",
    }


def test_tpu_fsdp_step_reduce_scatters_counted_once_and_gathers_once():
    """The choosing page's FSDP step for v5e:2x4. Its text holds 6 all-gather and 3
    all-reduce instructions: one gather printed in each of the 3 fusions of its async
    chain, and each gradient's reduce-scatter a fusion whose body is an all-reduce."""
    text = stored("tpu_v5e_2x4_fsdp_step.hlo")
    assert text.count(" all-gather(") == 6 and text.count(" all-reduce(") == 3
    assert 'custom_call_target="AsyncCollectiveDone"' in text
    assert text.count("kind=kCustom, calls=%all-reduce-scatter") == 2
    assert count_collectives(text) == {
        "all-reduce": 1,
        "all-gather": 4,
        "reduce-scatter": 2,
    }
    scatters = [c for c in read_collectives(text) if c.kind == "reduce-scatter"]
    for c in scatters:  # a (1024, 4096) f32 gradient summed over 8, an eighth kept
        assert c.result_bytes == 1024 * 4096 * 4 // 8 and c.group_size == 8
        assert c.wire_bytes == 7 / 8 * 1024 * 4096 * 4
    assert sorted(c.result for c in scatters) == ["f32[128,4096]", "f32[4096,128]"]


def test_tpu_loops_print_no_trip_count_so_runs_are_unknown():
    text = stored("tpu_v5e_2x4_shard_map.hlo")
    assert "known_trip_count" not in text
    looped = [c for c in read_collectives(text) if c.runs is None]
    assert [(c.kind, c.group_size) for c in looped] == [("all-reduce", 4)]


def test_tpu_multislice_transfers_between_slices_are_all_reduces_over_them():
    found = read_collectives(stored("tpu_2_slices_v5e_2x4_dp_step.hlo"))
    between = [c for c in found if c.group_size == 2]
    assert len(between) == 3 and {c.kind for c in between} == {"all-reduce"}
    for c in between:  # two slices: each sends its part once, 2(2-1)/2 * V
        assert c.wire_bytes == c.result_bytes


def test_gpu_data_parallel_step_all_reduces_the_gradients_and_the_loss():
    """8 H100s: two async all-reduces, one of the loss and three gradients concatenated
    (1 + 1024 + 4096 + 4096 * 1024 numbers), one of the other kernel's gradient."""
    text = stored("gpu_h100x8_dp_step.hlo")
    assert text.count("all-reduce-start(") == text.count("all-reduce-done(") == 2
    found = read_collectives(text)
    assert [(c.kind, c.result, c.group_size) for c in found] == [
        ("all-reduce", "f32[4199425]", 8),
        ("all-reduce", "f32[1024,4096]", 8),
    ]
    assert sum(c.result_bytes for c in found) == W + 4
    assert sum(c.wire_bytes for c in found) == 2 * 7 / 8 * (W + 4)


def test_gpu_fsdp_step_gathers_the_weights_and_reduce_scatters_their_gradients():
    """8 H100s, async pairs whose starts hold (operands, results) tuples: two gathers of
    two weights each (all of W), one reduce-scatter of the four gradients (W/8 kept on
    each device) and the loss's all-reduce."""
    text = stored("gpu_h100x8_fsdp_step.hlo")
    assert text.count("all-gather-start(") == text.count("all-gather-done(") == 2
    found = read_collectives(text)
    assert count_collectives(text) == {
        "all-reduce": 1,
        "all-gather": 2,
        "reduce-scatter": 1,
    }
    gathers = [c for c in found if c.kind == "all-gather"]
    assert sum(c.result_bytes for c in gathers) == W
    assert sum(c.wire_bytes for c in gathers) == 7 / 8 * W
    (scatter,) = [c for c in found if c.kind == "reduce-scatter"]
    assert scatter.result == "(f32[128], f32[128,4096], f32[512], f32[128,4096])"
    assert scatter.result_bytes == W // 8 and scatter.wire_bytes == 7 / 8 * W
    (loss,) = [c for c in found if c.kind == "all-reduce"]
    assert (loss.result, loss.group_size) == ("f32[]", 8)


def test_gpu_sync_and_async_collectives_and_a_loop():
    """shard_map on a (2, 4) mesh of H100s, device 4x + y: outside the loop every
    collective is synchronous ("is_sync":true); the psum in the scan of 3 is async."""
    text = stored("gpu_h100x8_shard_map.hlo")
    assert text.count('"is_sync":true') == 5 and "all-reduce-start(" in text
    rows = {
        (c.kind, c.result, c.group_size, c.wire_bytes, c.runs): c.groups
        for c in read_collectives(text)
    }
    block = 128 * 256 * 4
    assert rows == {
        ("all-reduce", "f32[128,256]", 4, 2 * 3 / 4 * block, 3): [
            [0, 1, 2, 3],
            [4, 5, 6, 7],
        ],
        ("all-reduce", "f32[128,256]", 2, 2 * 1 / 2 * block, 1): [
            [0, 4],
            [1, 5],
            [2, 6],
            [3, 7],
        ],
        ("all-gather", "f32[1024,256]", 8, 7 / 8 * 8 * block, 1): [list(range(8))],
        ("all-to-all", "f32[128,256]", 4, 3 / 4 * block, 1): [
            [0, 1, 2, 3],
            [4, 5, 6, 7],
        ],
        ("reduce-scatter", "f32[32,256]", 4, 3 / 4 * block, 1): [
            [0, 1, 2, 3],
            [4, 5, 6, 7],
        ],
        ("collective-permute", "f32[128,256]", None, block, 1): [
            [0, 1],
            [1, 2],
            [2, 3],
            [3, 0],
            [4, 5],
            [5, 6],
            [6, 7],
            [7, 4],
        ],
    }


def test_start_done_pairs_and_async_wrappers_count_once():
    """XLA's GPU spellings, written by hand (tests/docs_build/test_hlo.py)."""
    found = [(c.kind, c.result, c.group_size) for c in read_collectives(GPU_STYLE)]
    assert found == [
        ("reduce-scatter", "f32[2,16]", 4),  # inside the async-start's computation
        ("all-gather", "f32[8,16]", 4),  # the result, not the (operand, result) tuple
        ("all-reduce", "f32[8,16]", 2),
    ]
