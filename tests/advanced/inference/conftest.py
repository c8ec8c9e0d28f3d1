"""The inference page's weights, prompt, one-device run and compiled layouts, built once.

`reference` is independent of the snippets: a float64 NumPy model that recomputes every
sequence from scratch at every step, head by head, with no cache.
"""

import contextlib
import io

import numpy as np
import pytest

from snippets.advanced.inference import decode, layouts


def quietly(function, *args):
    """Call `function`, returning its result and what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = function(*args)
    return result, out.getvalue()


def numpy_logits(weights: dict, tokens: np.ndarray) -> np.ndarray:
    """Logits (batch, T, VOCAB) of a causal attention layer, one head at a time."""
    w = {name: np.asarray(a, np.float64) for name, a in weights.items()}
    length = tokens.shape[1]
    x = w["embed"][tokens] + w["pos"][:length]
    out = np.zeros_like(x)
    future = np.triu(np.ones((length, length), bool), k=1)
    for h in range(w["wq"].shape[1]):
        q, k, v = (x @ w[name][:, h] for name in ("wq", "wk", "wv"))
        scores = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
        scores[:, future] = -np.inf
        p = np.exp(scores - scores.max(axis=-1, keepdims=True))
        p /= p.sum(axis=-1, keepdims=True)
        out += p @ v @ w["wo"][h]
    return (x + out) @ w["unembed"]


def numpy_greedy(
    weights: dict, prompt: np.ndarray, new_tokens: int, model=numpy_logits
):
    """Greedy decoding by recomputing the whole sequence at every step with `model`."""
    sequence, tokens, logits = np.asarray(prompt), [], []
    for _ in range(new_tokens):
        last = model(weights, sequence)[:, -1]
        tokens.append(last.argmax(axis=-1))
        logits.append(last)
        sequence = np.concatenate([sequence, tokens[-1][:, None]], axis=1)
    return np.stack(tokens, axis=1), np.stack(logits, axis=1)


@pytest.fixture(scope="package")
def page_inputs(devices):
    """(weights, prompt) as the page makes them."""
    return quietly(decode.make_prompt)[0]


@pytest.fixture(scope="package")
def reference(page_inputs):
    """(tokens, logits) of 8 greedy tokens from NumPy, without a cache."""
    return numpy_greedy(*page_inputs, 8)


@pytest.fixture(scope="package")
def one_device(page_inputs):
    """((prefill_one, step_one, tokens, logits), printed) of the page's one-device run."""
    return quietly(decode.generate_on_one_device, *page_inputs)


@pytest.fixture(scope="package")
def x_mesh(devices):
    return quietly(layouts.make_mesh)[0]


@pytest.fixture(scope="package")
def found(x_mesh):
    """({layout: (Sharded, prefill compiled, step compiled)}, printed table) at batch 8."""
    return quietly(layouts.compare_batch_8, x_mesh)
