"""The sequence parallelism page's data and meshes, built once for its test modules."""

import contextlib
import io

import numpy as np
import pytest

from snippets.advanced.sequence_parallel import attention, ring


def quietly(function, *args):
    """Call `function`, returning its result and what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = function(*args)
    return result, out.getvalue()


def reference(q, k, v, causal=False):
    """Attention in float64 NumPy, the max subtracted per row."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    scores = q @ k.T / np.sqrt(q.shape[1])
    if causal:
        scores = np.where(np.tri(len(q), len(k), dtype=bool), scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    return (weights / weights.sum(axis=1, keepdims=True)) @ v


@pytest.fixture(scope="package")
def qkv(devices):
    """The page's q, k and v, whole on one device, and what the data block printed."""
    return quietly(attention.make_data)


@pytest.fixture(scope="package")
def seq_mesh(devices):
    return ring.seq_mesh()


@pytest.fixture(scope="package")
def placed(qkv, seq_mesh):
    """(q, k, v) split over "seq", and what the placing block printed."""
    return quietly(ring.place, *qkv[0], seq_mesh)
