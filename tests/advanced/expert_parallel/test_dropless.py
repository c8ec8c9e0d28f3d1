"""Dropless dispatch: every token through its expert, the queue places by sorting, and what
ragged_all_to_all does on the CPU backend."""

import jax
import numpy as np
import pytest
from jax import P

from snippets.advanced.expert_parallel import capacity as cap
from snippets.advanced.expert_parallel import dispatch, dropless
from snippets.advanced.expert_parallel.traffic import all_to_all_bytes
from snippets.hlo import count_collectives, read_collectives


def test_no_token_is_dropped_and_the_layer_is_the_plain_mixture(
    x, tokens, params, expert_mesh, capsys
):
    y, gap = dropless.run_dropless(x, tokens, params, expert_mesh)
    assert gap <= 1e-5
    expected = cap.reference_moe(tokens, params, groups=8, capacity=None)
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)
    assert y.any(axis=1).all()
    assert capsys.readouterr().out == ("0 tokens out as zeros, within 1e-05: True\n")
    # ... where the capacity layer, at factor 1, drops tokens
    _, routed, kept = cap.expert_load(x, params["router"], groups=8, factor=1.0)
    assert (routed - kept).sum() > 0
    y1 = np.asarray(dispatch.moe_layer(expert_mesh, 1.0)(x, params))
    assert (~y1.any(axis=1)).sum() == (routed - kept).sum()


def test_the_worst_case_buffer_costs_eight_times_factor_one(x, params, expert_mesh):
    """CPU backend: two all-to-alls, each of the (experts, tokens per group, d) buffer,
    as many bytes as the page prints from the formula."""
    compiled = dropless.dropless_layer(expert_mesh).lower(x, params).compile()
    assert count_collectives(compiled) == {"all-to-all": 2}
    sent = {c.wire_bytes for c in read_collectives(compiled)}
    whole_group = all_to_all_bytes(8, len(x) // 8, x.shape[1], 8)
    assert sent == {whole_group} == {14_336}
    factor_1 = all_to_all_bytes(8, cap.capacity(32, 8, 1.0), 16, 8)
    assert whole_group == 8 * factor_1


def test_ragged_all_to_all_does_not_run_on_the_cpu_backend(
    x, params, expert_mesh, capsys
):
    """If a JAX release runs it on CPU, this fails: the page's section must then change."""
    ragged = dropless.ragged_on_cpu(x, params, expert_mesh)
    assert capsys.readouterr().out == (
        "JaxRuntimeError: UNIMPLEMENTED: HLO opcode `ragged-all-to-all` is not "
        "supported by XLA:CPU ThunkEmitter\n"
    )
    expert, _ = dropless.route(x, params["router"])
    assert "ragged_all_to_all" in ragged.lower(x, expert).as_text()
    with pytest.raises(jax.errors.JaxRuntimeError, match="XLA:CPU ThunkEmitter"):
        ragged(x, expert)


def test_a_mesh_without_an_expert_axis_is_refused(line_mesh):
    with pytest.raises(ValueError, match="name one 'expert'"):
        dropless.dropless_layer(line_mesh)
    with pytest.raises(ValueError, match="name one 'expert'"):
        dropless.on_experts(lambda x: x, line_mesh, P("expert"))
