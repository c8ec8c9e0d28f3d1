"""The strategy planner's formulas against the compiled grid: every entry's state and wire
bytes within the stated tolerance, per target; the compiler's departures from the textbook
plan; the CPU rows what this environment compiles; and inputs the planner refuses."""

import dataclasses
import json
import math
import re
from types import SimpleNamespace

import pytest

from docs_build import planner as pl
from docs_build import planner_grid as grid

GRID = json.loads(grid.RESULTS.read_text())
ENTRIES = {(e["target"], e["config"], tuple(e["mesh"])): e for e in GRID["entries"]}
# The grid's floor: sizes x meshes x targets, CPU and one TPU at least.
FLOOR = 4 * 6 * 2
PAGE = pl.Model(
    vocab=32768, d_model=1024, heads=8, mlp=4096, layers=8, seq=1024, batch=16
)


def ids(key):
    return f"{key[0]} / {key[1]} / {key[2]}"


def test_the_grid_is_complete_and_meets_its_floor():
    assert len(GRID["entries"]) >= FLOOR
    assert {"cpu", "v5e:2x4"} <= set(GRID["targets"])
    expected = {
        (t, c, m)
        for t in GRID["targets"]
        for c in grid.configs_of(t)
        for m in grid.meshes_of(t, c)
    }
    assert set(ENTRIES) == expected
    # every 8-device size on every 8-device target but those SKIPPED for time
    assert {
        ("v5e:2x4", "tiny"),
        ("v5e:2x4", "wide, no remat"),
        ("v5p:2x2x2", "tiny"),
        ("v5p:2x2x2", "wide, no remat"),
        ("v5p:2x2x2", "gqa, gated, tied"),
        ("h100:1x8", "tiny"),
    } == grid.SKIPPED
    for t in grid.TARGETS:
        assert set(grid.configs_of(t)) == {
            c for c in grid.CONFIGS if (t, c) not in grid.SKIPPED
        }
    assert not {k: e["error"] for k, e in ENTRIES.items() if "error" in e}
    assert len(grid.CONFIGS) >= 4
    assert set(GRID["configs"]) == set(grid.ALL_CONFIGS)
    assert {m: pl.name_of(*m) for m in grid.MESHES} == {
        (8, 1, 1): "data",
        (1, 8, 1): "FSDP",
        (1, 1, 8): "tensor",
        (2, 1, 4): "2-D",
        (4, 1, 2): "2-D",
        (2, 2, 2): "data x FSDP x tensor",
    }


# Beyond 8 devices: 64 and 256 TPU chips, 16 and 64 H100s, and at each count one mesh of
# every kind of layout the planner ranks.
KINDS = {
    "data",
    "FSDP",
    "tensor",
    "data x FSDP",
    "FSDP x tensor",
    "2-D",
    "data x FSDP x tensor",
}


def test_the_grid_reaches_64_and_256_chips_and_16_and_64_gpus_with_every_kind():
    from docs_build.compiled.targets import family

    counts = {}
    for (target, _, mesh), entry in ENTRIES.items():
        assert entry["devices"] == math.prod(mesh) == grid.devices_of(target)
        counts.setdefault(family(target), set()).add(entry["devices"])
        assert mesh in {lay.mesh for lay in pl.layouts(entry["devices"], stages=False)}
    assert counts == {"cpu": {8}, "tpu": {8, 64, 256}, "gpu": {8, 16, 64}}
    for target in grid.LARGE:
        for config in grid.LARGE_CONFIGS:
            meshes = [m for t, c, m in ENTRIES if (t, c) == (target, config)]
            assert sorted(pl.name_of(*m) for m in meshes) == sorted(KINDS)
            # the groups plan_of tells apart: gathers (fsdp), gradient sums (data x
            # fsdp), activation sums (tensor)
            for a, f, t in meshes:
                groups = [n for n in (a * f, f if a > 1 else 1, t) if n > 1]
                if (target, (a, f, t)) == ("v5p:4x4x4", (4, 4, 4)):
                    # a 4 x 4 x 4 cube's only 3-D mesh: gathers and activation sums
                    # both span 4 chips, told apart by kind (all-gather, all-reduce)
                    assert groups == [16, 4, 4]
                    continue
                assert len(groups) == len(set(groups)), (a, f, t)


def test_the_grid_was_made_from_the_code_as_it_is():
    now = grid.inputs_digest()
    stale = sorted(p for p in now if GRID["inputs"].get(p) != now[p])
    assert not stale, (
        f"docs_build/planner_grid.json is older than {stale}: run `nox -s planner` and "
        "commit the result"
    )


def test_two_processes_share_the_grid_by_its_stored_seconds():
    """`nox -s planner` compiles in two processes at once (libtpu loaded in both): each
    takes the longest (target, size) part left to whichever has less so far."""
    seconds = grid.stored_seconds(grid.RESULTS)
    parts = [(t, c) for t in GRID["targets"] for c in grid.configs_of(t)]
    assert set(seconds) == set(parts)
    mine, theirs = grid.share(parts, seconds)
    assert sorted(mine + theirs) == sorted(parts) and not set(mine) & set(theirs)
    totals = [sum(seconds[p] for p in share) for share in (mine, theirs)]
    assert abs(totals[0] - totals[1]) <= max(seconds.values())
    # a part the stored grid lacks counts as the mean of those it has
    known = {("cpu", "a"): 3.0, ("cpu", "b"): 1.0}
    assert grid.share([*known, ("cpu", "new")], known) == (
        [("cpu", "a")],
        [("cpu", "new"), ("cpu", "b")],
    )
    assert grid.stored_seconds(grid.HERE / "no such grid.json") == {}


def test_the_grid_configs_are_the_modules():
    for name, (fields, batch) in grid.ALL_CONFIGS.items():
        stored = GRID["configs"][name]
        assert stored["batch"] == batch
        assert {k: stored[k] for k in fields} == fields


@pytest.mark.parametrize("key", sorted(ENTRIES), ids=ids)
def test_state_formula_gives_the_compiled_arguments(key):
    state, compiled = pl.against_compiled(GRID, ENTRIES[key])["state"]
    assert compiled == ENTRIES[key]["memory"]["argument_bytes"]
    assert state == pytest.approx(compiled, rel=pl.TOLERANCE)


# The programs whose plan the model cannot read (planner_page.unmodelled): libtpu moves
# the attention output's FSDP weights with all-reduces on 256 v5e chips, and gathers the
# others. (On 64 v5p chips it all-reduces every one: Plan.all_reduced_fsdp, below.)
LARGE_SIZE = next(iter(grid.LARGE_CONFIGS))
UNMODELLED = {("v5e:16x16", LARGE_SIZE, (1, 256, 1))}
ALL_REDUCED = {
    ("v5p:4x4x4", LARGE_SIZE, (1, 64, 1)),
    ("v5p:4x4x4", "Llama-3-8B", (1, 64, 1)),
}


def test_fsdp_weights_all_reduced_whole_are_read_and_priced():
    """On 64 v5p chips, (1, 64, 1) of both sizes: no all-gather at all; FSDP's bf16
    weights all-reduced over the 64 chips once per layer; plan_of reads it, and the wire
    formula under that plan gives the program's bytes (a gather's plan falls more than the
    tolerance short)."""
    found = {
        key
        for key, e in ENTRIES.items()
        if pl.plan_of(e, pl.model_of(GRID, key[1])).all_reduced_fsdp
    }
    assert found == ALL_REDUCED
    for key in ALL_REDUCED:
        entry, model = ENTRIES[key], pl.model_of(GRID, key[1])
        assert "all-gather" not in entry["summary"]
        d, mlp = model.d_model, model.mlp
        assert any(
            c["kind"] == "all-reduce"
            and c["group_size"] == 64
            and c["runs"] == model.layers
            and {f"bf16[1,{d},{mlp}]", f"bf16[{d},{mlp}]"} & set(c["shapes"])
            for c in entry["collectives"]
        )
        plan = pl.plan_of(entry, model)
        compiled = sum(s["wire_bytes"] for s in entry["summary"].values())
        layout = pl.entry_layout(entry)
        assert pl.wire_bytes(model, layout, plan) == pytest.approx(
            compiled, rel=pl.TOLERANCE
        )
        assert plan.all_reduced_fsdp == (64,)
        gathering = dataclasses.replace(plan, all_reduced_fsdp=())
        assert pl.wire_bytes(model, layout, gathering) < compiled * (1 - pl.TOLERANCE)


MODELLED = sorted(set(ENTRIES) - UNMODELLED)


def test_the_unmodelled_programs_move_weights_with_all_reduces_and_miss_the_formula():
    from docs_build import planner_page

    assert {
        (e["target"], e["config"], tuple(e["mesh"])) for e in planner_page.unmodelled()
    } == UNMODELLED
    for key in UNMODELLED:
        entry, model = ENTRIES[key], pl.model_of(GRID, key[1])
        wire, compiled = pl.against_compiled(GRID, entry)["wire"]
        assert wire < compiled * (1 - pl.TOLERANCE)
        # the weights the formula gathers travel otherwise: fewer gathered bytes than it says
        gathers = pl.wire_terms(model, pl.entry_layout(entry), pl.plan_of(entry, model))
        gathered = entry["summary"].get("all-gather", {"wire_bytes": 0})["wire_bytes"]
        assert gathered < gathers["gathers"] * (1 - pl.TOLERANCE)
        # and bf16 weights of a block are all-reduced over fsdp once per layer: an MLP
        # matrix, or (256 v5e chips) the attention output
        d, mlp = model.d_model, model.mlp
        block = {f"bf16[{d},{mlp}]", f"bf16[{mlp},{d}]", "bf16[1,256,8,2048]"}
        assert any(
            c["kind"] == "all-reduce"
            and c["group_size"] == key[2][1]
            and c["runs"] == model.layers
            and block & set(c["shapes"])
            for c in entry["collectives"]
        )


def test_the_meshes_a_v5p_cube_refuses_are_recorded_with_jaxs_reason():
    refused = {(r["target"], tuple(r["mesh"])): r["refusal"] for r in GRID["refused"]}
    assert set(refused) == {(t, m) for t, ms in grid.REFUSED.items() for m in ms}
    for reason in refused.values():
        assert reason.startswith("NotImplementedError")
        assert "product of some subset of the physical mesh axis sizes" in reason


@pytest.mark.parametrize("key", MODELLED, ids=ids)
def test_wire_formula_under_the_programs_plan_gives_its_wire_bytes(key):
    wire, compiled = pl.against_compiled(GRID, ENTRIES[key])["wire"]
    summary = ENTRIES[key]["summary"].values()
    assert compiled == sum(s["wire_bytes"] for s in summary)
    assert wire == pytest.approx(compiled, rel=pl.TOLERANCE)


@pytest.mark.parametrize(
    "key", [k for k in MODELLED if k[2][1] > 1 and k not in ALL_REDUCED], ids=ids
)
def test_the_gathers_term_is_the_programs_all_gathers(key):
    """FSDP's gathers, alone: within the tolerance of what the program gathers (where
    it gathers: ALL_REDUCED's programs all-reduce the weights instead)."""
    entry = ENTRIES[key]
    model, layout = pl.model_of(GRID, key[1]), pl.entry_layout(entry)
    gathers = pl.wire_terms(model, layout, pl.plan_of(entry, model))["gathers"]
    compiled = entry["summary"]["all-gather"]["wire_bytes"]
    assert gathers == pytest.approx(compiled, rel=pl.TOLERANCE)


def test_the_largest_disagreement_per_figure_and_target_is_within_the_tolerance():
    largest = {}
    for key in MODELLED:
        for figure, (ours, theirs) in pl.against_compiled(GRID, ENTRIES[key]).items():
            gap = abs(ours - theirs) / theirs
            largest[key[0], figure] = max(largest.get((key[0], figure), 0.0), gap)
    assert set(largest) == {(t, f) for t in GRID["targets"] for f in ("state", "wire")}
    assert max(largest.values()) <= pl.TOLERANCE
    # The CPU keeps no tiles: its state is exact.
    assert largest["cpu", "state"] == 0


def test_the_compiler_departs_from_the_textbook_plan_exactly_here():
    """A JAX or libtpu release that changes a plan fails here (the page names them)."""
    found = {}
    for (target, config, mesh), entry in ENTRIES.items():
        if target not in grid.TARGETS:
            continue  # beyond 8 devices: the next test
        model = pl.model_of(GRID, config)
        for departure in pl.plan_of(entry, model).departures(model):
            found.setdefault((target, departure), set()).add((config, mesh))

    def where(test):
        return {(c, m) for c in grid.CONFIGS for m in grid.MESHES if test(c, m)}

    gathered = where(lambda c, m: m[1] > 1)
    summed = where(lambda c, m: m[0] * m[1] > 1)
    split = where(lambda c, m: m[2] > 1)
    every = "every gradient all-reduced over data x fsdp, not scattered"
    expected = {
        ("cpu", "gather in f32, not bf16"): gathered,
        # the program asks for bf16 gradient sums; the CPU backend promotes them to f32
        ("cpu", "gradients in f32, not bf16"): summed,
        ("cpu", "activations in f32, not bf16"): split,
        ("cpu", every): gathered,
    }
    gated = "gqa, gated, tied"
    for target in set(grid.TARGETS) - {"cpu"}:
        expected[target, every] = gathered
        # the TPUs add the input gradients that share an input (q with k and v, gate
        # with up) before the all-reduce over tensor: two sums per block
        expected[target, "input gradients summed in 2 all-reduces per block, not 3"] = {
            (c, m) for c, m in split if c != gated
        }
        expected[target, "input gradients summed in 2 all-reduces per block, not 4"] = {
            (c, m) for c, m in split if c == gated
        }
    # v5e reduce-scatters FSDP's head gradient, for the page's size one of q and out and
    # one MLP matrix too, and with a tied head the float32 embedding's gradient
    fsdp = where(lambda c, m: m == (1, 8, 1))
    expected["v5e:2x4", every] = where(lambda c, m: m == (2, 2, 2))
    expected[
        "v5e:2x4",
        "the gradients of k and v, of one of q and out and of one MLP matrix all-reduced "
        "over data x fsdp",
    ] = {("page", (1, 8, 1))}
    expected[
        "v5e:2x4",
        "the gradients of q and out, of k and v and of every MLP matrix all-reduced over "
        "data x fsdp",
    ] = fsdp - {("page", (1, 8, 1))}
    expected[
        "v5e:2x4", "the embedding's gradient reduce-scattered, not all-reduced"
    ] = {(gated, (1, 8, 1))}
    # H100: FSDP scatters every gradient, as the textbook does, but on (2, 2, 2); the head
    # is gathered in float32 and, with remat, most block weights again in float32 for the
    # backward pass; each block's attention output is summed in bfloat16; and a tied
    # head's gradient is added to the embedding's before the sum over data
    h100 = "h100:1x8"
    expected[h100, every] = where(lambda c, m: m == (2, 2, 2))
    both = where(lambda c, m: m in ((1, 8, 1), (2, 2, 2)))
    expected[h100, "the head gathered in f32"] = {(c, m) for c, m in both if c != gated}
    again = "gathered again in f32 for the backward pass"
    expected[
        h100, f"the weights of q and out, of k and v and of one MLP matrix {again}"
    ] = {(c, m) for c, m in both if c in ("tiny", "page")}
    expected[
        h100, f"the weights of q and out, of k and v and of 2 MLP matrices {again}"
    ] = {(c, m) for c, m in both if c == gated}
    expected[h100, "each block's attention output summed in bf16, not f32"] = split
    expected[h100, "a tied head's gradient added to the embedding's before the sum"] = {
        (gated, m) for m in ((8, 1, 1), (2, 1, 4), (4, 1, 2))
    }
    expected[h100, "the embedding's gradient reduce-scattered, not all-reduced"] = {
        (gated, (1, 8, 1))
    }
    # the sizes a target skips (grid.SKIPPED) show nothing there
    expected = {
        (target, departure): kept
        for (target, departure), where_ in expected.items()
        if (kept := {(c, m) for c, m in where_ if (target, c) not in grid.SKIPPED})
    }
    assert found == expected


# Beyond 8 devices, each departure from the textbook plan of the larger size's programs,
# by where it shows: meshes with fsdp, with tensor, with both data and fsdp.
LARGE_DEPARTURES = {
    "h100": {
        "fsdp": {
            "the weights of q and out, of k and v and of 2 MLP matrices gathered again in "
            "f32 for the backward pass",
            "the head gathered in f32",
        },
        "tensor": {
            "input gradients summed in 2 all-reduces per block, not 4",
            "each block's attention output summed in bf16, not f32",
        },
        "data and fsdp": {"every gradient all-reduced over data x fsdp, not scattered"},
    },
}


def tpu_large_departures(a: int, f: int, t: int) -> set[str]:
    """libtpu's departures on 64 v5p and 256 v5e chips, the same on both: tensor sums a
    block's input gradients in 2 all-reduces; every mesh with fsdp all-reduces the
    gradients over data x fsdp, all of them, or on fsdp x tensor (no data axis) the block
    matrices' (v5e's 8-chip programs scatter them)."""
    found = set()
    if t > 1:
        found.add("input gradients summed in 2 all-reduces per block, not 4")
    if f > 1 and a == 1 and t > 1:
        found.add(
            "the gradients of q and out, of k and v and of every MLP matrix all-reduced "
            "over data x fsdp"
        )
    elif f > 1:
        found.add("every gradient all-reduced over data x fsdp, not scattered")
    return found


@pytest.mark.parametrize(
    "key", sorted(k for k in ENTRIES if k[0] in grid.LARGE), ids=ids
)
def test_the_larger_programs_depart_from_the_textbook_plan_exactly_here(key):
    """The H100 programs of 16 and 64 GPUs depart as the 8-GPU node's do: FSDP gathers the
    head and, for the backward pass, the block weights again in float32; tensor sums the
    gated block's input gradients in 2 all-reduces and the attention output in bf16; a
    mesh with data and fsdp all-reduces every gradient, as the node's (2, 2, 2) does. The
    TPU programs of 64 and 256 chips: tpu_large_departures."""
    target, config, (a, f, t) = key
    model = pl.model_of(GRID, config)
    found = set(pl.plan_of(ENTRIES[key], model).departures(model))
    chip = target.split(":")[0]
    if chip in ("v5e", "v5p"):
        expected = tpu_large_departures(a, f, t)
        if key in ALL_REDUCED:
            expected.add(
                "FSDP's weights all-reduced whole over an fsdp axis of 64, not gathered"
            )
        assert found == expected
        return
    assert chip in LARGE_DEPARTURES, (
        f"{key}: {sorted(found)}: say where {chip}'s departures show in LARGE_DEPARTURES"
    )
    rules = LARGE_DEPARTURES[chip]
    expected = set()
    for where, holds in (
        ("fsdp", f > 1),
        ("tensor", t > 1),
        ("data and fsdp", a * f > f > 1),
    ):
        if holds:
            expected |= rules[where]
    assert found == expected


def test_the_textbook_gradient_width_is_what_the_lowered_step_asks_for(devices):
    """The step casts each weight to bfloat16 before its products, so the products that
    give the weights' gradients return bfloat16 in the program itself, before any backend
    compiles it: the width the textbook plan sums them in. (The CPU backend sums them in
    float32: a departure, test_the_compiler_departs_from_the_textbook_plan_exactly_here.)"""
    import jax
    import jax.numpy as jnp
    from jax.sharding import AxisType, NamedSharding

    from snippets.advanced.transformer import init, model, step

    fields, batch = grid.CONFIGS["tiny"]
    cfg = model.Config(**fields)
    mesh = jax.make_mesh(
        (8, 1, 1), ("data", "fsdp", "tensor"), axis_types=(AxisType.Auto,) * 3
    )
    sharded = init.sharded_init(cfg, mesh)
    tokens = jax.ShapeDtypeStruct(
        (batch, cfg.seq + 1),
        jnp.int32,
        sharding=NamedSharding(mesh, model.mesh_axes(("batch", None))),
    )
    text = step.make_train_step(sharded, mesh).lower(sharded.abstract, tokens).as_text()
    results = re.findall(r"stablehlo\.dot_general.*->\s*tensor<([0-9x]+)x(\w+)>", text)
    assert results
    d, h, m, v = cfg.d_model, cfg.heads, cfg.mlp, cfg.vocab
    # each matrix's gradient has the weight's dimensions (in some order); no activation
    # of this size has the same ones
    weights = {
        "q": (d, h, d // h),
        "kv": (2, d, h, d // h),
        "out": (h, d // h, d),
        "up": (d, m),
        "down": (m, d),
        "head": (d, v),
    }
    widths = {}
    for name, shape in weights.items():
        found = {
            dtype
            for dims, dtype in results
            if sorted(map(int, dims.split("x"))) == sorted(shape)
        }
        assert found, name
        widths[name] = found
    bytes_of = {"bf16": pl.BF16, "f32": pl.F32}
    assert {bytes_of[t] for t in set().union(*widths.values())} == {
        pl.TEXTBOOK.gradients
    }


# Daily: the stored CPU rows change only with the pinned versions, checked on every push.
@pytest.mark.daily
@pytest.mark.parametrize("mesh", [(2, 2, 2), (1, 1, 8)], ids=str)
def test_cpu_rows_are_what_this_environment_compiles(devices, mesh):
    now = grid.describe("cpu", "tiny", mesh, devices)
    stored = ENTRIES["cpu", "tiny", mesh]
    for name in ("mesh", "memory", "summary", "collectives"):
        assert now[name] == stored[name], name


def test_the_state_formula_is_the_transformer_pages(devices):
    """The page's own state_bytes (AdamW, float32) is the planner's, less the tokens."""
    from snippets.advanced.transformer import memory, model

    cfg = model.Config(**grid.CONFIGS["page"][0])
    for mesh in grid.MESHES:
        layout = pl.Layout("x", *mesh)
        tokens = 4 * 16 // (mesh[0] * mesh[1]) * (cfg.seq + 1)
        page = memory.state_bytes(
            cfg, SimpleNamespace(shape=dict(fsdp=mesh[1], tensor=mesh[2]))
        )
        assert pl.state_bytes(PAGE, layout) - tokens == page


def test_blocks_hold_what_the_closed_form_counts():
    for mesh in grid.MESHES:
        layout = pl.Layout("x", *mesh)
        held = sum(math.prod(b) for b in pl.blocks(PAGE, layout).values())
        tokens = 4 * 16 // (mesh[0] * mesh[1]) * (PAGE.seq + 1)
        assert 12 * held + 8 + tokens == pl.state_bytes(PAGE, layout)
    assert PAGE.params == sum(
        math.prod(b) for b in pl.blocks(PAGE, pl.Layout("one")).values()
    )


def test_tpu_tiles_pad_small_blocks_and_leave_large_ones():
    assert pl.tiled((1024, 1024)) == 1024 * 1024
    assert pl.tiled((32,)) == 128
    assert pl.tiled((2, 256)) == 512  # a (2, 128) tile, not (8, 128)
    assert pl.tiled((8, 32, 32)) == 8 * 32 * 128  # no pair avoids the padding
    # minor 32 -> 128 on one dimension of 32; 2 or 8 as the second: no more padding
    assert pl.tiled((2, 3, 32, 8, 32)) == 2 * 3 * 32 * 8 * 128


def test_the_planner_lists_every_layout_that_divides_and_marks_what_fits():
    rows = pl.plan_table(PAGE, 8, memory=16e9)
    assert [(r.layout.name, r.layout.mesh, r.layout.stages) for r in rows] == [
        ("data", (8, 1, 1), 1),
        ("FSDP", (1, 8, 1), 1),
        ("tensor", (1, 1, 8), 1),
        ("2-D", (4, 1, 2), 1),
        ("2-D", (2, 1, 4), 1),
        ("data x FSDP", (4, 2, 1), 1),
        ("data x FSDP", (2, 4, 1), 1),
        ("FSDP x tensor", (1, 4, 2), 1),
        ("FSDP x tensor", (1, 2, 4), 1),
        ("data x FSDP x tensor", (2, 2, 2), 1),
        ("pipeline", (1, 1, 1), 8),
        ("pipeline x FSDP", (1, 2, 1), 4),
        ("pipeline x tensor", (1, 1, 2), 4),
        ("pipeline x FSDP", (1, 4, 1), 2),
        ("pipeline x tensor", (1, 1, 4), 2),
        ("pipeline x FSDP x tensor", (1, 2, 2), 2),
    ]
    assert all(r.fits for r in rows)
    small = pl.plan_table(PAGE, 8, memory=400e6)
    # what splits every weight eight ways fits: FSDP, tensor, and FSDP x tensor; and the
    # pipelines whose last stage, split over fsdp or tensor, holds a quarter of the layers
    # or fewer beside the head
    assert [
        (r.layout.name, r.layout.mesh, r.layout.stages) for r in small if r.fits
    ] == [
        ("FSDP", (1, 8, 1), 1),
        ("tensor", (1, 1, 8), 1),
        ("FSDP x tensor", (1, 4, 2), 1),
        ("FSDP x tensor", (1, 2, 4), 1),
        ("pipeline x FSDP", (1, 2, 1), 4),
        ("pipeline x tensor", (1, 1, 2), 4),
        ("pipeline x FSDP", (1, 4, 1), 2),
        ("pipeline x tensor", (1, 1, 4), 2),
        ("pipeline x FSDP x tensor", (1, 2, 2), 2),
    ]
    # the last stage of 2 x fsdp 2 x tensor 2: 4 layers and the head, split 4 ways,
    # the norms 2 ways; AdamW's 12 bytes each; two counters; 8 sequences' tokens
    split = (4 * PAGE.layer_matrices + PAGE.vocab * 1024) // 4 + 9 * 1024 // 2
    assert small[-1].state == split * 12 + 4 * 2 + 4 * 8 * 1025
    # 6 devices: a batch of 16 splits neither 6 nor 3 ways, 8 heads neither 6 nor 3
    # ways, 8 layers not into 6 stages: no layout
    assert pl.plan_table(PAGE, 6, 16e9) == []
    assert pl.no_layout(PAGE, 6) == (
        "None of the 14 layouts of 6 devices can split this model (each row says why): "
        "use 4 or 8 devices, or change the sizes the rows name"
    )
    assert pl.no_layout(PAGE, 8) is None
    # SGD keeps no slots: a third of AdamW's parameter bytes, and one counter, not two
    sgd = pl.Model(**{**PAGE.__dict__, "optimizer": "sgd"})
    layout = pl.Layout("data", data=8)
    tokens = 4 * 2 * 1025
    assert (pl.state_bytes(sgd, layout) - 4 - tokens) * 3 == (
        pl.state_bytes(PAGE, layout) - 8 - tokens
    )


def test_textbook_fsdp_scatters_what_data_parallelism_all_reduces():
    """Under the textbook plan, FSDP's reduce-scatter of the block matrices and the head
    sends half of data parallelism's all-reduce of them: (N-1)/N of their bytes less, in
    bfloat16."""
    data = pl.wire_terms(PAGE, pl.Layout("data", data=8))["gradients"]
    fsdp = pl.wire_terms(PAGE, pl.Layout("FSDP", fsdp=8))["gradients"]
    scattered = PAGE.layers * PAGE.layer_matrices + PAGE.d_model * PAGE.vocab
    assert data - fsdp == pytest.approx(7 / 8 * pl.BF16 * scattered)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: pl.Model(64, 0, 4, 128, 2, 16, 8),
            "d_model must be a positive integer, not 0",
        ),
        (
            lambda: pl.Model(64, 30, 4, 128, 2, 16, 8),
            "d_model 30 does not split into 4 heads",
        ),
        (
            lambda: pl.Model(64, 32, 4, 128, 2, 16, 8, optimizer="lion"),
            "optimizer must be one of",
        ),
        (
            lambda: pl.Model(64, 32, 4, 128, 2, 16, 8, param_bytes=3),
            "param_bytes must be 4",
        ),
        (
            lambda: pl.check(
                pl.Model(64, 32, 4, 128, 2, 16, 8, microbatches=3),
                pl.Layout("p", stages=2),
            ),
            "a batch of 8 does not cut into 3 microbatches: use a number of "
            "microbatches that divides it",
        ),
        (lambda: pl.Layout("x", data=0), "positive axis sizes"),
        (lambda: pl.Layout("x", data=2, stages=2), "not stages and data"),
        (
            lambda: pl.state_bytes(
                pl.Model(**{**PAGE.__dict__, "microbatches": 8}),
                pl.Layout("p", fsdp=4, stages=2),
            ),
            "a microbatch of 2 sequences does not split over fsdp = 4 devices: use a "
            "batch that is a multiple of microbatches x fsdp = 32",
        ),
        (
            lambda: pl.wire_bytes(PAGE, pl.Layout("p", tensor=16, stages=2)),
            "heads 8 does not split 16 ways (tensor): use a multiple of 16",
        ),
        (lambda: pl.layouts(0), "devices must be a positive integer"),
        (
            lambda: pl.state_bytes(PAGE, pl.Layout("data", data=3)),
            "a batch of 16 does not split over data x fsdp = 3 devices: use a multiple of 3",
        ),
        (
            lambda: pl.wire_bytes(PAGE, pl.Layout("tensor", tensor=16)),
            "heads 8 does not split 16 ways (tensor): use a multiple of 16",
        ),
        (
            lambda: pl.state_bytes(
                pl.Model(64, 40, 4, 128, 2, 16, 16), pl.Layout("FSDP", fsdp=16), "tpu"
            ),
            "d_model 40 does not split 16 ways (fsdp): use a multiple of 16",
        ),
        (
            lambda: pl.state_bytes(PAGE, pl.Layout("p", stages=3)),
            "8 layers do not split into 3 stages: make layers a multiple of 3",
        ),
        (
            lambda: pl.state_bytes(PAGE, pl.Layout("data", data=8), "gpu"),
            "backend must be cpu or tpu",
        ),
        (lambda: pl.Plan(gather=3), "gather must be 2 (bf16) or 4 (f32) bytes, not 3"),
        (lambda: pl.Plan(scatter=("head", "head")), "scatter names matrices from"),
        (
            lambda: pl.plan_table(PAGE, 8, memory=0),
            "memory per device must be positive",
        ),
        (lambda: pl.blocks(PAGE, pl.Layout("p", stages=2)), "blocks are for"),
        (
            lambda: pl.Model(64, 32, 4, 128, 2, 16, 8, kv_heads=3),
            "3 key/value heads do not serve 4 query heads equally",
        ),
        (
            lambda: pl.Model(64, 32, 4, 128, 2, 16, 8, kv_heads=0),
            "kv_heads must be a positive integer, not 0",
        ),
        (
            lambda: pl.wire_bytes(
                pl.Model(64, 32, 4, 128, 2, 16, 8, kv_heads=2), pl.Layout("t", tensor=4)
            ),
            "kv_heads 2 does not split 4 ways (tensor): use a multiple of 4",
        ),
        (
            lambda: pl.wire_bytes(
                PAGE, pl.Layout("f", fsdp=8), pl.Plan(scatter=("mlp",) * 3)
            ),
            "scatter names 'mlp' more often than the model has it",
        ),
    ],
)
def test_bad_input_says_what_to_change(call, message):
    with pytest.raises(pl.CostModelError, match=re.escape(message)):
        call()


def test_a_model_is_refused_field_by_field():
    """Every field at fault is named with what to change, not only the first."""
    with pytest.raises(pl.InputError) as err:
        pl.Model(0, 30, 4, 128, -2, 16, 8, kv_heads=3, microbatches=0)
    assert err.value.problems == {
        "vocab": "vocab must be a positive integer, not 0",
        "layers": "layers must be a positive integer, not -2",
        "microbatches": "microbatches must be a positive integer, not 0",
        "heads": "d_model 30 does not split into 4 heads: make d_model a multiple of heads",
        "kv_heads": "3 key/value heads do not serve 4 query heads equally: make kv_heads "
        "divide heads",
    }
    # a size that is not a whole number is not divided: only its own message
    with pytest.raises(pl.InputError) as err:
        pl.Model(64, 32, 2.5, 128, 2, 16, 8)
    assert err.value.problems == {"heads": "heads must be a positive integer, not 2.5"}


def test_a_layout_that_cannot_split_the_model_says_every_reason_and_spares_the_rest():
    """Microbatches that do not divide the batch are the pipeline's problem only: the
    model stands, and so does every other layout."""
    model = pl.Model(64, 32, 4, 130, 3, 16, 10, kv_heads=2, microbatches=4)
    assert pl.reasons(model, pl.Layout("p", stages=2)) == [
        "3 layers do not split into 2 stages: make layers a multiple of 2",
        "a batch of 10 does not cut into 4 microbatches: use a number of microbatches "
        "that divides it",
    ]
    assert pl.reasons(model, pl.Layout("t", data=1, fsdp=3, tensor=4)) == [
        "a batch of 10 does not split over data x fsdp = 3 devices: use a multiple of 3",
        "d_model 32 does not split 3 ways (fsdp): use a multiple of 3",
        "kv_heads 2 does not split 4 ways (tensor): use a multiple of 4",
        "mlp 130 does not split 4 ways (tensor): use a multiple of 4",
    ]
    with pytest.raises(pl.CostModelError, match="; kv_heads 2 does not split"):
        pl.check(model, pl.Layout("t", data=1, fsdp=3, tensor=4))
    rows = pl.plan_table(model, 2, memory=1e9)
    assert [r.layout.name for r in rows] == ["data", "FSDP", "tensor"]
    assert pl.reasons(model, pl.Layout("data", data=2)) == []


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"kv_heads": 2},
        {"kv_heads": 2, "gated": True},
        {"tied": True},
        {"kv_heads": 2, "gated": True, "tied": True},
    ],
)
def test_the_planners_model_is_the_transformer_pages(options):
    """Parameters and each device's state, by the planner's formulas, are the transformer
    page's: its param_count, and the blocks its RULES give the abstract state."""
    import jax

    from snippets.advanced.transformer.init import build_mesh, sharded_init
    from snippets.advanced.transformer.model import Config, param_count

    cfg = Config(vocab=64, d_model=32, heads=4, mlp=128, layers=2, seq=16, **options)
    model = pl.Model.from_config(cfg, batch=8)
    assert model.params == param_count(cfg)
    mesh = build_mesh((1, 2, 2))
    params = sharded_init(cfg, mesh).abstract["model"]
    shards = {
        jax.tree_util.keystr(path): leaf.sharding.shard_shape(leaf.shape)
        for path, leaf in jax.tree_util.tree_leaves_with_path(params)
    }
    blocks = pl.blocks(model, pl.Layout("x", fsdp=2, tensor=2))

    def last(key):  # "['layers']['kv']" -> "kv"
        return key.rsplit("['", 1)[-1].split("'")[0]

    assert sorted(blocks) == sorted(last(k) for k in shards)
    for key, shape in shards.items():
        assert tuple(shape) == blocks[last(key)], key


def test_every_preset_is_counted_as_published():
    from snippets.advanced.transformer.model import param_count
    from snippets.advanced.transformer.presets import PRESETS

    for preset in PRESETS.values():
        model = pl.Model.from_config(preset.config, batch=1)
        assert model.params == param_count(preset.config)


def test_pipeline_figures_are_modelled_not_checked():
    layout = pl.Layout("pipeline", stages=8)
    model = pl.Model(**{**PAGE.__dict__, "microbatches": 8})
    assert pl.wire_bytes(model, layout) == 2 * (8 + 8 - 1) * 2 * 1024 * 1024 * 2
    assert pl.temporaries(PAGE, pl.Layout("data", data=8)) is None


def test_a_pipeline_split_over_fsdp_and_tensor_sends_its_share_and_its_stages_sums():
    """stages x fsdp x tensor: each device sends its fsdp share of a microbatch at every
    tick of the schedule, and runs the collectives of its stage as a (1, fsdp, tensor)
    mesh would: the last stage's 4 layers and head, without the embedding's gather and
    gradient sum (the first stage has the embedding)."""
    model = pl.Model(**{**PAGE.__dict__, "microbatches": 4})
    layout = pl.Layout("pipeline x FSDP x tensor", fsdp=2, tensor=2, stages=2)
    terms = pl.wire_terms(model, layout)
    micro = 16 // 4 // 2 * 1024 * 1024 * 2  # sequences, tokens, width, bf16
    assert terms["pipeline wire"] == 2 * (4 + 2 - 1) * micro
    stage = pl.Model(**{**PAGE.__dict__, "layers": 4})
    mesh = pl.wire_terms(stage, pl.Layout("FSDP x tensor", fsdp=2, tensor=2))
    embedding = 4 * 32768 * 1024 / 2  # float32, its vocabulary split over tensor
    # all-gathered over fsdp 2 (half of it sent), all-reduced over data x fsdp 2
    assert terms["stage gathers"] == pytest.approx(mesh["gathers"] - embedding / 2)
    assert terms["stage gradients"] == pytest.approx(mesh["gradients"] - embedding)
    assert terms["stage activations"] == mesh["activations"]
    assert terms["stage loss"] == mesh["loss"]
    # a pipeline alone has no stage collectives: the figure it had before
    alone = pl.wire_terms(model, pl.Layout("pipeline", stages=8))
    assert alone == {"pipeline wire": 2 * (4 + 8 - 1) * 16 // 4 * 1024 * 1024 * 2}
