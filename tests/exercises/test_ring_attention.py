"""The ring_attention exercise: its solution's checks and program, and the grader's models."""

import jax
import numpy as np
import pytest
from jax import P
from jax.sharding import AxisType, NamedSharding

from snippets.exercises import solution
from snippets.exercises.ring_attention import grader
from snippets.hlo import count_collectives

ring_attention = solution("ring_attention")


def placed(n, positions, d, seed=0):
    mesh = jax.make_mesh(
        (n,), ("seq",), axis_types=(AxisType.Explicit,), devices=jax.devices()[:n]
    )
    rng = np.random.default_rng(seed)
    q, k, v = rng.standard_normal((3, positions, d)).astype(np.float32)
    split = NamedSharding(mesh, P("seq"))
    return (q, k, v), [jax.device_put(a, split) for a in (q, k, v)], mesh


def numpy_causal(q, k, v):
    scores = q.astype(np.float64) @ k.T / np.sqrt(q.shape[1])
    scores[np.triu_indices(len(q), 1)] = -np.inf
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    return weights / weights.sum(axis=1, keepdims=True) @ v


@pytest.mark.parametrize(("n", "positions", "d"), [(8, 64, 16), (4, 40, 8), (2, 6, 3)])
def test_the_solution_is_causal_attention_in_2_n_minus_1_permutes(n, positions, d):
    (q, k, v), args, mesh = placed(n, positions, d)
    out = ring_attention(*args, mesh)
    np.testing.assert_allclose(out, numpy_causal(q, k, v), atol=1e-5)
    assert out.sharding.spec == P("seq", None)
    compiled = jax.jit(ring_attention, static_argnums=3).lower(*args, mesh).compile()
    assert count_collectives(compiled) == {"collective-permute": 2 * (n - 1)}


def test_the_solution_checks_its_mesh_and_shapes(mesh):
    (_, args, line) = placed(8, 64, 16)
    with pytest.raises(ValueError, match=r"one axis 'seq', not \{'x': 2, 'y': 4\}"):
        ring_attention(*args, mesh)
    odd = np.zeros((12, 4), np.float32)
    with pytest.raises(ValueError, match=r"splits over 8 devices; got \(12, 4\)"):
        ring_attention(odd, odd, odd, line)


def test_the_graders_models_of_the_mistakes_differ_from_the_answer():
    """Each model gives other values than causal attention, so the grader can tell them
    apart; the model of the right ring is causal attention itself."""
    (q, k, v), _, _ = placed(8, 64, 16)
    right = numpy_causal(q, k, v)
    np.testing.assert_allclose(grader.simulated_ring(q, k, v, 8), right, atol=1e-9)
    np.testing.assert_allclose(grader.causal_attention(q, k, v), right, atol=1e-9)
    for wrong in (
        grader.simulated_ring(q, k, v, 8, sends="left"),
        grader.simulated_ring(q, k, v, 8, rescale=False),
        grader.simulated_ring(q, k, v, 1, masked=False),
    ):
        assert not grader.close(wrong, right)
    # Sending to the left is right when the mask follows it: the ring is one device.
    np.testing.assert_allclose(
        grader.simulated_ring(q, k, v, 1, sends="left"), right, atol=1e-9
    )


def test_the_cases_have_the_sizes_the_statement_names():
    """4 devices in one case, blocks shorter and longer than d, scores of a few hundred."""
    cases = grader.ring_attention_cases()
    blocks = []
    for case in cases:
        q, k, _, mesh = case.args()
        n = mesh.shape["seq"]
        blocks.append((n, q.shape[0] // n, q.shape[1]))
        scores = np.asarray(q) @ np.asarray(k).T / np.float32(np.sqrt(q.shape[1]))
        if "scores of a few hundred" in case.about:
            assert 100 < np.abs(scores).max() < 1000
            with np.errstate(over="ignore"):
                assert np.isinf(np.exp(scores)).any()
        else:
            assert np.abs(scores).max() < 20
    assert blocks == [(8, 8, 16), (8, 5, 8), (4, 10, 8), (8, 4, 8)]
