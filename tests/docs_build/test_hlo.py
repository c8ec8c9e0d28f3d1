"""The build's HLO reader: every spelling and feature against real compiled programs.

The fixtures are programs compiled by `python -m docs_build.compiled.fixtures` (CPU and
libtpu), trimmed; what each holds was worked out by hand from the program that made it.
Live tests compile on the 8 CPU devices and check the reader against what the program
computes when it runs.
"""

import math
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import P
from jax.sharding import AxisType, Mesh, NamedSharding

from docs_build import hlo

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def by_kind(program: hlo.Program) -> dict[str, list[hlo.Collective]]:
    found: dict[str, list[hlo.Collective]] = {}
    for c in program.collectives:
        found.setdefault(c.kind, []).append(c)
    return found


def naive_counts(text: str) -> dict[str, int]:
    """What a regular expression over the text sees (the pages' counter once did this)."""
    return {
        op: len(re.findall(rf"\s{op}(?:-start)?\(", text))
        for op in hlo.KINDS
        if re.search(rf"\s{op}(?:-start)?\(", text)
    }


# ---------------------------------------------------------------- sizes


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        ("f32[4096,128]{1,0:T(8,128)S(1)}", 4096 * 128 * 4),
        ("bf16[4096,1024]{1,0:T(8,128)(2,1)S(1)}", 4096 * 1024 * 2),
        ("(f32[], f32[1024]{0}, /*index=2*/s32[2]{0:S(4)})", 4 + 4096 + 8),
        ("pred[3]", 3),
        ("s4[3]", 2),  # 12 bits round up to 2 bytes
        ("f32[]", 4),
    ],
)
def test_nbytes_reads_tuples_layouts_and_packed_types(shape, expected):
    assert hlo.nbytes(shape) == expected


def test_an_unknown_element_type_raises_instead_of_counting_zero():
    with pytest.raises(hlo.HloParseError, match="q7"):
        hlo.nbytes("q7[4]")


# ---------------------------------------------------------------- replica groups


def test_explicit_groups_and_the_empty_list():
    assert hlo.replica_groups("{{0,1,2,3},{4,5,6,7}}") == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert hlo.replica_groups("{}", num_devices=4) == [[0, 1, 2, 3]]
    with pytest.raises(hlo.HloParseError, match="number of devices"):
        hlo.replica_groups("{}")


def test_iota_groups_plain_and_transposed():
    assert hlo.replica_groups("[2,4]<=[8]") == [[0, 1, 2, 3], [4, 5, 6, 7]]
    # ids of a 2x4 mesh, transposed: the groups are its columns.
    assert hlo.replica_groups("[4,2]<=[2,4]T(1,0)") == [
        [0, 4],
        [1, 5],
        [2, 6],
        [3, 7],
    ]
    assert hlo.replica_groups("[4,16]<=[16,4]T(1,0)")[0] == list(range(0, 64, 4))


def test_mesh_groups_follow_the_named_axes_in_their_order():
    mesh = "mesh['x'=2,'y'=4]"
    assert hlo.replica_groups(f"{mesh} {{'y'}}") == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert hlo.replica_groups(f"{mesh} {{'x'}}") == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert hlo.replica_groups(f"{mesh} {{'x','y'}}") == [list(range(8))]
    assert hlo.replica_groups(f"{mesh} {{'y','x'}}") == [[0, 4, 1, 5, 2, 6, 3, 7]]
    assert hlo.replica_groups("mesh['axis_0'=8] {'axis_0'}") == [list(range(8))]


def test_mesh_sub_axes_as_xla_documents_them():
    # XLA's MeshAxesReplicaGroupList: for mesh<"a"=8>, {a:(1)2} reshapes [8] to
    # [1,2,4] and groups over the 2; {a:(1)2, a:(4)2} reshapes to [2,2,2] and groups
    # over the outer two.
    assert hlo.replica_groups("mesh['a'=8] {'a':(1)2}") == [
        [0, 4],
        [1, 5],
        [2, 6],
        [3, 7],
    ]
    assert hlo.replica_groups("mesh['a'=8] {'a':(2)2}") == [
        [0, 2],
        [1, 3],
        [4, 6],
        [5, 7],
    ]
    assert hlo.replica_groups("mesh['a'=8] {'a':(1)2,'a':(4)2}") == [
        [0, 1, 4, 5],
        [2, 3, 6, 7],
    ]


def test_mesh_with_its_own_device_order():
    text = "mesh['x'=2,'y'=2], device_ids=(0,2,1,3) {'y'}"
    assert hlo.replica_groups(text) == [[0, 2], [1, 3]]
    text = "mesh['x'=2,'y'=2], device_ids=([2,2]<=[2,2]T(1,0)) {'x'}"
    assert hlo.replica_groups(text) == [[0, 1], [2, 3]]


def test_an_unknown_axis_or_spelling_raises():
    with pytest.raises(hlo.HloParseError, match="'z'"):
        hlo.replica_groups("mesh['x'=2] {'z'}")
    with pytest.raises(hlo.HloParseError):
        hlo.replica_groups("groups(0,1)")


# ---------------------------------------------------------------- fixtures: CPU


def test_cpu_every_kind_with_mesh_groups_and_tuple_results():
    program = hlo.read(fixture("cpu_shard_map.hlo"))
    assert program.unaccounted() == [] and program.folded == {}
    found = [(c.kind, c.shapes, c.group_size, c.groups) for c in program.collectives]
    # mesh (a, b, c) = (2, 2, 2): device id 4a + 2b + c; x is (8, 16) f32 per device.
    assert sorted(found) == sorted(
        [
            ("all-reduce", ("f32[8,16]",), 2, ((0, 2), (1, 3), (4, 6), (5, 7))),  # b
            ("all-reduce", ("f32[8,16]",), 4, ((0, 4, 1, 5), (2, 6, 3, 7))),  # c, a
            (
                "all-reduce",
                ("f32[8,16]", "f32[8,16]"),  # psum of a tuple: one all-reduce
                2,
                ((0, 4), (1, 5), (2, 6), (3, 7)),
            ),
            ("all-gather", ("f32[16,16]",), 2, ((0, 4), (1, 5), (2, 6), (3, 7))),
            ("reduce-scatter", ("f32[4,16]",), 2, ((0, 1), (2, 3), (4, 5), (6, 7))),
            (
                "all-to-all",
                ("f32[4,16]", "f32[4,16]"),
                2,
                ((0, 2), (1, 3), (4, 6), (5, 7)),
            ),
            (
                "collective-permute",
                ("f32[8,16]",),
                None,
                ((0, 1), (1, 0), (2, 3), (3, 2), (4, 5), (5, 4), (6, 7), (7, 6)),
            ),
        ]
    )
    scatter = by_kind(program)["reduce-scatter"][0]
    assert (scatter.result_bytes, scatter.full_bytes) == (256, 512)


def test_cpu_loops_multiply_by_xlas_known_trip_count():
    text = fixture("cpu_loops.hlo")
    assert text.count('"known_trip_count"') == 3
    found = by_kind(hlo.read(text))
    (summed,) = found["all-reduce"]
    (gathered,) = found["all-gather"]
    assert (summed.trip_counts, summed.runs) == ((4,), 4)  # scan of length 4
    assert (gathered.trip_counts, gathered.runs) == ((5, 3), 15)  # 3 inside 5
    assert summed.computation != gathered.computation
    # The static counter sees each once.
    assert naive_counts(text) == {"all-reduce": 1, "all-gather": 1}


def test_known_trip_count_is_what_is_read_when_xla_writes_it():
    text = fixture("cpu_loops.hlo")
    assert text.count('"known_trip_count":{"n":"4"}') == 1
    edited = text.replace(
        '"known_trip_count":{"n":"4"}', '"known_trip_count":{"n":"7"}'
    )
    (summed,) = by_kind(hlo.read(edited))["all-reduce"]
    assert summed.runs == 7  # the annotation, not the counter (which still says 4)


# ---------------------------------------------------------------- fixtures: TPU


def test_tpu_loops_without_known_trip_count_are_read_from_their_counter():
    text = fixture("tpu_v5e_2x4_shard_map.hlo")
    assert "known_trip_count" not in text  # libtpu does not write it
    looped = [c for c in hlo.read(text).collectives if c.trip_counts]
    assert [(c.kind, c.trip_counts, c.runs) for c in looped] == [
        ("all-reduce", (4, 3), 12)  # a scan of 3 inside a scan of 4
    ]


def test_tpu_async_pairs_count_once_with_the_done_result():
    text = fixture("tpu_v5e_2x4_shard_map.hlo")
    assert "collective-permute-done(" in text and "all-to-all-done(" in text
    found = by_kind(hlo.read(text))
    (permute,) = found["collective-permute"]
    (swap,) = found["all-to-all"]
    # The starts are tuples (operand, result, context...); the result is one block.
    assert permute.form == swap.form == "async"
    assert permute.shapes == ("f32[128,256]",) and permute.result_bytes == 131072
    assert swap.shapes == ("f32[4,32,256]",) and swap.result_bytes == 131072
    assert permute.groups == (
        (0, 1),
        (1, 2),
        (2, 3),
        (3, 0),
        (4, 5),
        (5, 6),
        (6, 7),
        (7, 4),
    )
    # every kind shard_map's collectives make (a ragged all-to-all is read below)
    assert sorted(hlo.summarize(hlo.read(text).collectives)) == sorted(
        set(hlo.KINDS) - {"ragged-all-to-all"}
    )


def test_tpu_iota_groups_from_the_partitioner():
    program = hlo.read(fixture("tpu_v5e_2x4_iota.hlo"))
    found = {c.replica_groups: c.groups for c in program.collectives}
    assert found == {
        "[4,2]<=[2,4]T(1,0)": ((0, 4), (1, 5), (2, 6), (3, 7)),  # over "data"
        "[2,4]<=[8]": ((0, 1, 2, 3), (4, 5, 6, 7)),  # over "model"
    }


def test_tpu_fsdp_reduce_scatter_fusions_and_async_chains_count_once():
    text = fixture("tpu_v5e_2x4_fsdp_step.hlo")
    # What a regex sees: each chain's all-gather three times, the reduce-scatters as
    # the all-reduces inside them.
    assert naive_counts(text) == {"all-reduce": 3, "all-gather": 6}
    assert 'custom_call_target="AsyncCollectiveDone"' in text
    program = hlo.read(text)
    assert program.unaccounted() == []
    found = by_kind(program)
    assert {k: len(v) for k, v in found.items()} == {
        "all-gather": 4,
        "reduce-scatter": 2,
        "all-reduce": 1,
    }
    weights = sorted(c.shapes for c in found["all-gather"] if c.dtype == "bf16")
    assert weights == [("bf16[1024,4096]",), ("bf16[4096,1024]",)]  # v5e gathers bf16
    assert {c.form for c in found["all-gather"]} == {"sync", "async-fusion"}
    for scatter in found["reduce-scatter"]:
        # The gradient of a (1024, 4096) weight, summed over 8 and 1/8 kept.
        assert scatter.form == "all-reduce-scatter-fusion"
        assert scatter.result_bytes == 1024 * 4096 * 4 // 8
        assert scatter.full_bytes == 1024 * 4096 * 4
        assert scatter.group_size == 8
        assert hlo.wire_bytes(scatter) == 7 / 8 * 1024 * 4096 * 4
    (loss_and_biases,) = found["all-reduce"]
    assert loss_and_biases.shapes == ("f32[]", "f32[1024]", "f32[4096]")


def test_tpu_multislice_dcn_transfers_are_collectives_over_the_slices():
    """Data parallelism over 2 slices of v5e:2x4: the program is one slice's. Within it the
    gradients are reduce-scattered and gathered again over its 8 chips; between slices,
    each chip all-reduces its eighth through the megascale runtime's host sends."""
    text = fixture("tpu_2_slices_v5e_2x4_dp_step.hlo")
    assert "num_partitions=8" in text  # one slice's chips, not 16
    assert text.count('_xla_megascale_transfer_type="ALL_REDUCE"') == 6  # send + recv
    program = hlo.read(text)
    assert program.unaccounted() == []
    dcn = [c for c in program.collectives if c.network == "dcn"]
    ici = [c for c in program.collectives if c.network is None]
    assert {(c.kind, c.group_size) for c in ici} == {
        ("reduce-scatter", 8),
        ("all-gather", 8),
        ("all-reduce", 8),
    }
    assert len(dcn) == 3 and all(c.name.startswith("send") for c in dcn)
    assert {c.kind for c in dcn} == {"all-reduce"} and {c.group_size for c in dcn} == {
        2
    }
    kernels = sorted(c.result_bytes for c in dcn)[1:]
    # an eighth of each (1024, 4096) f32 kernel's gradient: f32[512,8,128]
    assert kernels == [1024 * 4096 * 4 // 8] * 2
    for c in dcn:
        assert c.form == "megascale" and c.runs == 1
        assert hlo.wire_bytes(c) == 2 * (2 - 1) / 2 * c.full_bytes
    assert program.collectives[-1].as_record()["network"] == "dcn"


def test_a_megascale_transfer_of_an_unknown_kind_raises():
    text = fixture("tpu_2_slices_v5e_2x4_dp_step.hlo").replace(
        '_xla_megascale_transfer_type="ALL_REDUCE"',
        '_xla_megascale_transfer_type="BROADCAST"',
    )
    with pytest.raises(
        hlo.HloParseError, match="unknown megascale transfer 'BROADCAST'"
    ):
        hlo.read(text)


# ---------------------------------------------------------------- synthetic: GPU style

# The CPU and TPU compilers of this stack never print all-gather-start or
# all-reduce-start (GPU does); this module is written by hand in XLA's spelling of them.
GPU_STYLE = """\
HloModule synthetic, num_partitions=4

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %sum = f32[] add(%a, %b)
}

%wrapped (p: f32[8,16]) -> f32[2,16] {
  %p = f32[8,16]{1,0} parameter(0)
  ROOT %rs = f32[2,16]{1,0} reduce-scatter(%p), channel_id=3, replica_groups={}, use_global_device_ids=true, dimensions={0}, to_apply=%add
}

ENTRY %main (x: f32[2,16]) -> (f32[8,16], f32[8,16], f32[2,16]) {
  %x = f32[2,16]{1,0} parameter(0)
  %ags = (f32[2,16]{1,0}, f32[8,16]{1,0}) all-gather-start(%x), channel_id=1, replica_groups=[1,4]<=[4], dimensions={0}, use_global_device_ids=true
  %agd = f32[8,16]{1,0} all-gather-done(%ags)
  %ars = f32[8,16]{1,0} all-reduce-start(%agd), channel_id=2, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=%add
  %ard = f32[8,16]{1,0} all-reduce-done(%ars)
  %as = ((f32[8,16]{1,0}), f32[2,16]{1,0}, u32[]) async-start(%ard), calls=%wrapped
  %ad = f32[2,16]{1,0} async-done(%as), calls=%wrapped
  ROOT %out = (f32[8,16]{1,0}, f32[8,16]{1,0}, f32[2,16]{1,0}) tuple(%agd, %ard, %ad)
}
"""


def test_start_done_pairs_and_async_wrappers_count_once():
    program = hlo.read(GPU_STYLE)
    assert program.unaccounted() == []
    found = [(c.kind, c.shapes, c.group_size, c.form) for c in program.collectives]
    assert found == [
        ("reduce-scatter", ("f32[2,16]",), 4, "async"),
        ("all-gather", ("f32[8,16]",), 4, "async"),  # the result, not the tuple
        ("all-reduce", ("f32[8,16]",), 2, "async"),
    ]
    assert all(c.runs == 1 and c.computation == "main" for c in program.collectives)


# ---------------------------------------------------------------- ragged all-to-all


def test_gpu_ragged_all_to_all_sends_at_most_its_input():
    """The expert-parallel page's ragged dispatch on 8 H100s: the result is the buffer for
    the worst case, what a device sends is at most its first operand."""
    program = hlo.read(fixture("gpu_h100x8_ragged_dispatch.hlo"))
    assert program.unaccounted() == []
    found = by_kind(program)
    assert sorted(found) == ["all-gather", "ragged-all-to-all"]
    (ragged,) = found["ragged-all-to-all"]
    assert ragged.shapes == ("f32[8192,1024]",) and ragged.group_size == 8
    assert ragged.full_bytes == 1024 * 1024 * 4  # the tokens in: 1024 of 1024 f32
    assert (
        ragged.result_bytes == 8 * ragged.full_bytes
    )  # room for every device's tokens
    assert ragged.runs == 1 and ragged.form == "sync"
    assert hlo.wire_bytes(ragged) == 7 / 8 * ragged.full_bytes
    (counts,) = found["all-gather"]
    assert counts.shapes == ("s32[8,8]",)
    assert hlo.summarize(program.collectives)["ragged-all-to-all"]["runs"] == 1


def test_a_collective_the_reader_does_not_know_is_reported_not_dropped():
    text = fixture("gpu_h100x8_ragged_dispatch.hlo")
    (name,) = re.findall(r"%([\w.\-]+) = \S+ ragged-all-to-all\(", text)
    renamed = hlo.read(text.replace(" ragged-all-to-all(", " collective-broadcast("))
    assert renamed.unaccounted() == [name]
    assert [c.kind for c in renamed.collectives] == ["all-gather"]
    # an async start of an unknown kind too; its done is the same collective
    started = hlo.read(text.replace(" ragged-all-to-all(", " all-shuffle-start("))
    assert started.unaccounted() == [name]


# ---------------------------------------------------------------- costs


def collective(kind, result, full, n):
    return hlo.Collective(
        kind=kind,
        name="x",
        shapes=(),
        dtype="f32",
        result_bytes=result,
        full_bytes=full,
        group_size=n,
        groups=(),
        replica_groups="",
        computation="main",
        trip_counts=(),
        runs=1,
        form="sync",
    )


@pytest.mark.parametrize(
    ("kind", "result", "full", "n", "wire"),
    [
        ("all-gather", 800, 800, 8, 700),  # (N-1)/N of the gathered array
        ("reduce-scatter", 100, 800, 8, 700),  # (N-1)/N of the array before
        ("all-reduce", 800, 800, 8, 1400),  # 2(N-1)/N
        ("all-reduce", 4, 4, 1, 0),  # a group of one moves nothing
        ("all-to-all", 800, 800, 4, 600),  # (N-1)/N of the local block
        ("collective-permute", 800, 800, None, 800),  # the block
    ],
)
def test_wire_bytes_by_the_ring_model(kind, result, full, n, wire):
    c = collective(kind, result, full, n)
    assert hlo.wire_bytes(c) == wire
    assert hlo.wire_bytes(c.as_record()) == wire  # the stored form gives the same


def test_summary_multiplies_by_runs_and_leaves_unknown_runs_out():
    known = collective("all-reduce", 800, 800, 8)
    looped = hlo.Collective(**{**known.__dict__, "runs": 3, "trip_counts": (3,)})
    unknown = hlo.Collective(**{**known.__dict__, "runs": None, "trip_counts": (None,)})
    summary = hlo.summarize([known, looped, unknown])
    assert summary == {
        "all-reduce": {
            "count": 3,
            "runs": 4,
            "result_bytes": 4 * 800,
            "wire_bytes": 4 * 1400.0,
            "unknown_runs": 1,
        }
    }


# ---------------------------------------------------------------- live CPU programs


def compile_mapped(fn, mesh, in_spec, out_spec, shape):
    mapped = jax.jit(jax.shard_map(fn, mesh=mesh, in_specs=in_spec, out_specs=out_spec))
    arg = jax.ShapeDtypeStruct(
        shape, jnp.float32, sharding=NamedSharding(mesh, in_spec)
    )
    return mapped, mapped.lower(arg).compile()


@pytest.fixture(scope="module")
def auto_mesh(devices):
    return Mesh(np.array(devices).reshape(8), ("x",))


def test_live_psum_is_one_all_reduce_of_the_block(auto_mesh):
    _, compiled = compile_mapped(
        lambda x: jax.lax.psum(x, "x"), auto_mesh, P("x"), P(), (64, 16)
    )
    (c,) = hlo.read(compiled.as_text()).collectives
    assert (c.kind, c.shapes, c.result_bytes, c.group_size) == (
        "all-reduce",
        ("f32[8,16]",),
        8 * 16 * 4,
        8,
    )
    assert hlo.wire_bytes(c) == 2 * 7 / 8 * 512


def test_live_all_gather_result_is_the_whole_array(auto_mesh):
    _, compiled = compile_mapped(
        lambda x: jax.lax.all_gather(x, "x", tiled=True, to="invarying"),
        auto_mesh,
        P("x"),
        P(),
        (64, 16),
    )
    (c,) = hlo.read(compiled.as_text()).collectives
    assert (c.kind, c.result_bytes, c.full_bytes) == ("all-gather", 4096, 4096)
    assert hlo.wire_bytes(c) == 7 / 8 * 4096


def test_live_psum_in_a_scan_of_four_runs_four_times(auto_mesh):
    def f(x):
        def body(c, _):
            return c + jax.lax.psum(c, "x"), None

        return jax.lax.scan(body, x, None, length=4)[0]

    _, compiled = compile_mapped(f, auto_mesh, P("x"), P("x"), (64, 16))
    (c,) = hlo.read(compiled.as_text()).collectives
    assert (c.kind, c.trip_counts, c.runs) == ("all-reduce", (4,), 4)
    assert hlo.summarize([c])["all-reduce"]["result_bytes"] == 4 * 512


def test_live_loop_with_a_data_dependent_bound_says_unknown(auto_mesh):
    def f(x):
        def body(carry):
            i, c = carry
            return i + 1, c + jax.lax.psum(c, "x")

        limit = jnp.sum(x > 0).astype(jnp.int32)  # known only when it runs
        return jax.lax.while_loop(lambda carry: carry[0] < limit, body, (0, x))[1]

    _, compiled = compile_mapped(f, auto_mesh, P("x"), P("x"), (64, 16))
    (c,) = hlo.read(compiled.as_text()).collectives
    assert c.trip_counts == (None,) and c.runs is None
    assert hlo.summarize([c])["all-reduce"] == {
        "count": 1,
        "runs": 0,
        "result_bytes": 0,
        "wire_bytes": 0.0,
        "unknown_runs": 1,
    }


@pytest.mark.parametrize("axes", ["x", "y", ("x", "y"), ("y", "x")])
def test_live_mesh_groups_are_the_devices_that_sum_together(devices, axes):
    """Each device sums its group's device numbers: the groups the reader gives must
    reproduce what the program computes when it runs."""
    mesh = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2)

    def f(x):
        me = jax.lax.axis_index(("x", "y")).astype(jnp.float32)
        return x + jax.lax.psum(me, axes)

    mapped, compiled = compile_mapped(f, mesh, P(("x", "y")), P(("x", "y")), (8,))
    text = compiled.as_text()
    assert "replica_groups=mesh[" in text
    (c,) = hlo.read(text).collectives
    sums = np.asarray(mapped(jnp.zeros(8)))
    # Element p of the result is computed at mesh position p, whose axis_index is p:
    # the partition id that the groups name.
    assert sorted(p for group in c.groups for p in group) == list(range(8))
    for group in c.groups:
        for p in group:
            assert sums[p] == sum(group), (axes, c.replica_groups, group)
    assert math.prod(mesh.shape[a] for a in np.atleast_1d(axes)) == c.group_size


def test_live_collective_in_a_cond_branch_says_unknown(auto_mesh):
    def f(x):
        return jax.lax.cond(
            jnp.sum(x) > 0,
            lambda c: c + jax.lax.psum(c, "x"),
            lambda c: c,
            x,
        )

    _, compiled = compile_mapped(f, auto_mesh, P("x"), P("x"), (64, 16))
    text = compiled.as_text()
    assert " conditional(" in text
    (c,) = hlo.read(text).collectives
    assert c.trip_counts == (None,) and c.runs is None  # once, or not at all


# ---------------------------------------------------------------- what runs during a collective


def test_in_flight_counts_the_matmuls_libtpu_scheduled_inside_each_permute():
    """The fixture's ring: 7 async permutes on v5e:2x4. Read by hand from its ENTRY: the
    first five start and finish back to back; the fusions holding the 8 matmuls come after,
    3 of them between start.5 and done.5, 4 between start.6 and done.6, the last after."""
    pairs = hlo.in_flight(fixture("tpu_v5e_2x4_ring_matmul.hlo"))
    assert [p.kind for p in pairs] == ["collective-permute"] * 7
    assert [p.matmuls for p in pairs] == [0, 0, 0, 0, 0, 3, 4]
    assert pairs[5].start == "collective-permute-start.5"
    assert pairs[5].done == "collective-permute-done.5"


def test_in_flight_finds_no_pairs_where_collectives_are_synchronous():
    assert hlo.in_flight(fixture("cpu_shard_map.hlo")) == []


def test_in_flight_refuses_a_program_that_is_not_scheduled():
    mesh = Mesh(np.array(jax.devices()[:8]), ("x",))
    lowered = jax.jit(lambda x: x * 2).lower(
        jax.ShapeDtypeStruct((8,), jnp.float32, sharding=NamedSharding(mesh, P("x")))
    )
    with pytest.raises(hlo.HloParseError, match="not scheduled"):
        hlo.in_flight(lowered.as_text(dialect="hlo"))
