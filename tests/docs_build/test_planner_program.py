"""The program the strategy planner prints for a layout (docs_build.planner_program): the
grid compiles it (the printed text, up to its compile) and gets what planner_grid.json
holds; run on 8 CPU devices after the transformer page's names, it trains one step, lays
out every parameter as it says, and holds the state bytes the planner counts."""

import contextlib
import dataclasses
import io
import json
import math
import re

import jax
import pytest
from flax import nnx

from docs_build import planner as pl
from docs_build import planner_grid as grid
from docs_build import planner_program as pp

GRID = json.loads(grid.RESULTS.read_text())
STORED = {(e["target"], e["config"], tuple(e["mesh"])): e for e in GRID["entries"]}
CONFIGS = list(grid.CONFIGS)
# Every push: the two smallest sizes on a 3-D and a 1-D mesh (each CPU compile of the larger
# sizes takes 10 to 30 s of CI's two cores); daily: every CPU entry.
SAMPLE = {("tiny", (2, 2, 2)), ("gqa, gated, tied", (1, 8, 1))}
CPU_ENTRIES = [
    pytest.param(
        c,
        m,
        id=f"{c} / {m}",
        marks=() if (c, m) in SAMPLE else pytest.mark.daily,
    )
    for c in CONFIGS
    for m in grid.MESHES
]


@pytest.mark.parametrize(("config", "mesh"), CPU_ENTRIES)
def test_the_grid_compiles_the_printed_program(devices, config, mesh):
    """The grid's CPU entries are what the printed program compiles to: the same memory
    analysis and collectives (before and after `nox -s planner` recompiles the grid)."""
    now = grid.describe("cpu", config, mesh, devices)
    stored = STORED["cpu", config, mesh]
    for name in ("mesh", "memory", "summary", "collectives"):
        assert now[name] == stored[name], name


def test_the_grid_execs_the_text_the_planner_prints(monkeypatch, devices):
    """compile_step runs program(..., run=False), the printed program up to its compile."""
    seen = []
    real = pp.program

    def spy(model, layout, run=True):
        seen.append(real(model, layout, run))
        return seen[-1]

    monkeypatch.setattr(pp, "program", spy)
    _, batch = grid.CONFIGS["tiny"]
    compiled = grid.compile_step("tiny", (2, 2, 2), devices)
    model = pl.Model.from_config(grid._config("tiny"), batch)
    printed = real(model, pl.Layout("data x FSDP x tensor", 2, 2, 2))
    assert seen and printed.startswith(seen[0])
    assert printed[len(seen[0]) :].startswith("# One step on the devices:")
    assert compiled.memory_analysis().argument_size_in_bytes == pl.state_bytes(
        model, pl.Layout("x", 2, 2, 2)
    )


def test_the_parameters_logical_names_are_the_models(devices):
    from snippets.advanced.transformer import init, model

    for options in ({}, {"gated": True, "tied": True, "kv_heads": 2}):
        cfg = model.Config(**options)
        sharded = init.sharded_init(cfg, init.build_mesh((1, 1, 1)))
        state = nnx.filter_state(sharded.abstract, nnx.Param)
        found = {
            "/".join(map(str, path)): v.get_metadata()["out_sharding"]
            for path, v in nnx.to_flat_state(state)
        }
        planner = pl.Model.from_config(cfg, 8)
        listed = {
            name: names
            for name, names in pp.PARAMETERS
            if name in {p[0] for p in pp.parameters(planner, pl.Layout("x"))}
        }
        assert found == listed


def run(text: str) -> tuple[dict, str]:
    """Execute a printed program after the transformer page's names; its names and what it
    printed."""
    names = pp.namespace()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(text, "<printed program>", "exec"), names)
    return names, out.getvalue()


SMALL = pl.Model(vocab=64, d_model=64, heads=8, mlp=128, layers=2, seq=16, batch=8)
LLAMA_STYLE = pl.Model(
    vocab=64,
    d_model=64,
    heads=8,
    kv_heads=2,
    mlp=100,
    layers=2,
    seq=16,
    batch=8,
    gated=True,
    tied=True,
    remat=False,
)
# Every push: the Llama-style model's 2-D layout below (a step takes 10 to 20 s of CI's
# two cores); daily: every layout of 8 devices of the small model too.
EVERY_PUSH: set[tuple[int, int, int]] = set()
COPY_PASTE = [
    pytest.param(
        SMALL,
        lay,
        id=f"small {lay.mesh}",
        marks=() if lay.mesh in EVERY_PUSH else pytest.mark.daily,
    )
    for lay in pl.layouts(8, stages=False)
] + [
    pytest.param(LLAMA_STYLE, pl.Layout("data x FSDP", 2, 4), id="llama (2, 4, 1)"),
    # a remat policy the planner prints by name (Config(..., remat='offload')): daily,
    # its step took 41 s of the shared two cores
    pytest.param(
        dataclasses.replace(SMALL, remat="offload"),
        pl.Layout("FSDP x tensor", fsdp=4, tensor=2),
        id="small offload (1, 4, 2)",
        marks=pytest.mark.daily,
    ),
]


@pytest.mark.parametrize(("model", "layout"), COPY_PASTE)
def test_the_printed_program_trains_a_step_laid_out_as_planned(devices, model, layout):
    text = pp.program(model, layout)
    names, printed = run(text)
    loss = float(re.fullmatch(r"loss (\S+)\n", printed).group(1))
    assert math.isfinite(loss)
    state = names["state"]
    # every parameter, and AdamW's mu and nu of it, as the program's table says
    table = {
        cells[0]: cells[1:]
        for line in text.splitlines()
        if line.startswith("#   model/")
        for cells in [re.split(r"\s{2,}", line[4:].strip())]
    }
    planned = {
        name: (shape, spec, block)
        for name, shape, spec, block in pp.parameters(model, layout)
    }
    flat = dict(nnx.to_flat_state(state))
    params = {
        "/".join(map(str, path)): v.get_value()
        for path, v in flat.items()
        if path[0] == "model"
    }
    assert set(params) == set(planned) == set(table)
    for name, array in params.items():
        shape, spec, block = planned[name]
        assert array.shape == shape
        assert array.sharding.spec == jax.P(*spec)
        assert array.addressable_shards[0].data.shape == block
        assert table[name] == [str(shape), str(array.sharding.spec), str(block)]
        for moment in ("mu", "nu"):
            path = ("optimizer", "opt_state", 0, moment, *name.split("/")[1:])
            assert flat[path].get_value().sharding.spec == array.sharding.spec
    # the bytes each device holds: the state and its share of the tokens
    held = {d: 0 for d in devices}
    for leaf in jax.tree.leaves(state):
        for shard in leaf.addressable_shards:
            held[shard.device] += shard.data.nbytes
    tokens = names["tokens"]
    block = tokens.sharding.shard_shape(tokens.shape)
    per_device = {h + 4 * math.prod(block) for h in held.values()}
    assert per_device == {pl.state_bytes(model, layout)}


@pytest.mark.parametrize(
    ("model", "layout", "why"),
    [
        (SMALL, pl.Layout("pipeline", stages=8), pp.PIPELINE),
        (
            LLAMA_STYLE,
            pl.Layout("tensor", tensor=8),
            "no program: this layout cannot split the model: kv_heads 2 does not split "
            "8 ways (tensor): use a multiple of 8; mlp 100 does not split 8 ways "
            "(tensor): use a multiple of 8",
        ),
    ],
)
def test_a_row_that_cannot_be_a_program_says_why(model, layout, why):
    assert pp.why_not(model, layout) == why
    with pytest.raises(pl.CostModelError, match=re.escape(why)):
        pp.program(model, layout)
