import contextlib
import io
import re

import jax
import numpy as np
import pytest

from docs_build import hlo
from docs_build.compiled import pages
from docs_build.compiled.targets import spec_value
from snippets.advanced.transformer.init import build_mesh, sharded_init
from snippets.advanced.transformer.memory import (
    DEFAULT_FRACTION,
    H100_BYTES,
    fits,
    fits_here,
    state_bytes,
)
from snippets.advanced.transformer.model import Config

STATE = 86_984  # parameters, mu and nu of device 0, and two 4-byte counters
ALLOCATOR_VARIABLES = (
    "XLA_CLIENT_MEM_FRACTION",
    "XLA_PYTHON_CLIENT_MEM_FRACTION",
    "XLA_PYTHON_CLIENT_PREALLOCATE",
    "XLA_PYTHON_CLIENT_ALLOCATOR",
)
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
    # Seven weights per layer (two norm scales, q, kv, out, up, down), gathered once in
    # the forward pass; with remat, again when the backward pass recomputes the layer.
    assert gathers_in_the_layer_loops(lowered.compile()) == 7
    assert gathers_in_the_layer_loops(compiled_step[2]) == 14


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


def test_fits_adds_arguments_outputs_and_temporaries_counting_aliased_bytes_once(
    compiled_step,
):
    _, _, compiled = compiled_step
    m = compiled.memory_analysis()
    needed, ok = fits(compiled, 10**12)
    assert needed == (
        m.argument_size_in_bytes
        + m.output_size_in_bytes
        - m.alias_size_in_bytes
        + m.temp_size_in_bytes
    )
    assert ok
    assert m.alias_size_in_bytes == STATE  # the donated state, counted once
    assert fits(compiled, needed) == (needed, True)
    assert fits(compiled, needed - 1) == (needed, False)


def test_the_page_checks_against_the_h100_spec_and_the_default_fraction(
    compiled_step, memory_run
):
    assert spec_value("h100", "device_memory_size") == H100_BYTES
    assert pages.budget_bytes("h100") == int(H100_BYTES * DEFAULT_FRACTION)
    (_, lowered), _ = memory_run
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        fits_here(compiled_step[2], lowered)
    lines = out.getvalue().splitlines()
    assert [line.split(":")[0] for line in lines] == ["remat on", "remat off"]
    assert all(
        line.endswith(f"fits in {pages.budget_bytes('h100'):,}: True") for line in lines
    )


def test_the_h100_figures_are_fits_sum_of_the_stored_programs():
    for name in ("transformer step, remat", "transformer step, no remat"):
        p = pages.advanced_program("h100:1x8", name)
        m = p["memory"]
        needed = (
            m["argument_bytes"] + m["output_bytes"] - m["alias_bytes"] + m["temp_bytes"]
        )
        marker = f"<!-- gpu-fits: h100:1x8 / {name} -->"
        assert pages.fill(marker) == f"{needed / pages.MIB:,.1f} MiB"
        assert needed < pages.budget_bytes("h100")


@pytest.mark.parametrize(
    "env, expected",
    [
        ({}, {"allocator": "default"}),
        ({"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}, {"preallocate": False}),
        ({"XLA_CLIENT_MEM_FRACTION": ".9"}, {"memory_fraction": 0.9}),
        ({"XLA_PYTHON_CLIENT_MEM_FRACTION": ".9"}, {"memory_fraction": 0.9}),
        ({"XLA_PYTHON_CLIENT_ALLOCATOR": "platform"}, {"allocator": "platform"}),
    ],
)
def test_what_jax_hands_the_gpu_allocator_from_each_variable(
    monkeypatch, env, expected
):
    """JAX 0.12.0.1 turns the variables into the CUDA plugin's options (readable on CPU)."""
    from jaxlib import xla_client

    for name in ALLOCATOR_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    options = xla_client.generate_pjrt_gpu_plugin_options()
    assert {k: options[k] for k in expected} == expected
    if not env:  # no fraction and no preallocation setting: the plugin's defaults
        assert "memory_fraction" not in options and "preallocate" not in options


def test_both_names_of_the_fraction_are_refused(monkeypatch):
    from jaxlib import xla_client

    monkeypatch.setenv("XLA_CLIENT_MEM_FRACTION", ".9")
    monkeypatch.setenv("XLA_PYTHON_CLIENT_MEM_FRACTION", ".8")
    with pytest.raises(ValueError, match="deprecated"):
        xla_client.generate_pjrt_gpu_plugin_options()
