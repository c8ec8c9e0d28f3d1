import re

import jax
import numpy as np

from docs_build import hlo
from snippets.advanced.transformer.init import build_mesh, sharded_init
from snippets.advanced.transformer.memory import state_bytes
from snippets.advanced.transformer.model import Config

STATE = 86_984  # parameters, mu and nu of device 0, and two 4-byte counters
TOKENS = 2 * 17 * 4  # device 0's two examples of 17 int32 tokens


def test_the_formula_counts_parameters_adam_state_and_counters(cfg, mesh, sharded):
    assert state_bytes(cfg, mesh) == STATE
    # On a mesh of one device the formula is the whole state, as the shapes add it up.
    whole = sum(a.size * a.dtype.itemsize for a in jax.tree.leaves(sharded.abstract))
    assert state_bytes(cfg, build_mesh((1, 1, 1))) == whole
    # And on other meshes it is device 0's share of the abstract state's shardings.
    for shape in [(1, 2, 4), (2, 4, 1), (4, 1, 2), (1, 8, 1)]:
        mesh_ = build_mesh(shape)
        abstract = sharded_init(cfg, mesh_).abstract
        share = sum(
            np.prod(a.sharding.shard_shape(a.shape)) * a.dtype.itemsize
            for a in jax.tree.leaves(abstract)
        )
        assert state_bytes(cfg, mesh_) == share, shape


def test_the_state_bytes_equal_the_formula_exactly(memory_run, state):
    (table, _), _ = memory_run
    in_arrays = sum(a.addressable_shards[0].data.nbytes for a in jax.tree.leaves(state))
    assert in_arrays == STATE
    for remat in ("on", "off"):
        arguments, minus_tokens, aliased, _ = table[remat]
        assert arguments == STATE + TOKENS
        assert minus_tokens == STATE
        assert (
            aliased == STATE
        )  # donation: the new state lives in the old one's buffers


def test_remat_halves_the_temporaries_of_the_cpu_program(memory_run):
    (table, _), _ = memory_run
    on, off = table["on"][3], table["off"][3]
    assert 0.4 < on / off < 0.6  # the page: "cuts them by about half"


def gathers_in_the_layer_loops(program) -> int:
    """All-gathers that run once per layer: inside the forward or the backward scan."""
    found = hlo.read(program.as_text()).collectives
    return sum(1 for c in found if c.kind == "all-gather" and c.trip_counts == (2,))


def test_remat_gathers_each_layers_weights_again(memory_run, compiled_step):
    (_, lowered), _ = memory_run
    # Six weights per layer (two norm scales, qkv, out, up, down), gathered once in the
    # forward pass; with remat, again when the backward pass recomputes the layer.
    assert gathers_in_the_layer_loops(lowered.compile()) == 6
    assert gathers_in_the_layer_loops(compiled_step[2]) == 12


def test_remat_does_not_change_the_loss(sharded, batches, compiled_step, memory_run):
    (_, lowered), _ = memory_run
    without = sharded_init(Config(remat=False), build_mesh())
    _, loss_on = compiled_step[2](sharded.init(), batches[0])
    _, loss_off = lowered.compile()(without.init(), batches[0])
    np.testing.assert_allclose(float(loss_off), float(loss_on), rtol=1e-6)


def test_the_printed_table(memory_run):
    (table, _), out = memory_run
    lines = out.splitlines()
    assert lines[:3] == [
        "Bytes per device, cpu backend",
        "state by formula 86,984",
        "remat   arguments    - tokens     aliased temporaries",
    ]
    rows = [line.split() for line in lines[3:]]
    assert rows == [
        [remat, *(f"{n:,}" for n in table[remat])] for remat in ("on", "off")
    ]
    # Each number ends where its heading ends.
    ends = [
        lines[2].index(h) + len(h) for h in ("arguments", "tokens", "aliased", "ries")
    ]
    for line in lines[3:]:
        assert [m.end() for m in re.finditer(r"\S+", line)][1:] == ends
