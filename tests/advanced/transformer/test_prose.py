"""The numbers the page's prose states are the ones its code computes."""

from pathlib import Path

import flax
import jax.numpy as jnp
import pytest

PAGE = Path(__file__).resolve().parents[3] / "docs" / "advanced" / "transformer.md"


@pytest.fixture(scope="module")
def prose():
    return " ".join(PAGE.read_text().split())


def test_the_sizes_the_prose_names(prose, cfg, mesh, state):
    shape = " \u00d7 ".join(str(n) for n in mesh.shape.values())
    assert f"arranged as a {shape} mesh" in prose
    assert f"A weight of shape ({cfg.d_model}, {cfg.mlp})" in prose
    assert cfg.heads == 4 and "causal self-attention with four heads" in prose
    assert f"The model's {cfg.seq} positions and one more" in prose
    assert mesh.shape["data"] * mesh.shape["fsdp"] == 4
    assert "so the examples are split four ways" in prose
    kv = state["model"]["layers"]["kv"][...]
    assert kv.addressable_shards[0].data.size * 4 == kv.size
    assert "so device 0 holds a quarter of it" in prose
    norm = state["model"]["layers"]["attn_norm"][...]
    assert norm.addressable_shards[0].data.size * 2 == norm.size
    assert 'The norm scales have only `"embed"` and are split two ways' in prose


def test_the_versions_and_number_formats_the_prose_names(prose):
    assert flax.__version__.startswith("0.12")
    assert (
        "Flax 0.12 lays out what an annotated variable's initializer returns" in prose
    )
    bf16 = jnp.finfo(jnp.bfloat16)
    assert bf16.nmant + 1 == 8 and "with its 8 significant bits" in prose
    assert float(bf16.eps) / 2 == 2**-8
    assert "largest relative rounding error, 2<sup>-8</sup>" in prose
    assert "within a relative 2e-3, about half of bfloat16's" in prose
    assert 0.45 < 2e-3 / 2**-8 < 0.55


def test_the_claims_whose_tests_live_elsewhere_are_still_the_pages(prose):
    """Phrases held by test_step, test_memory and test_refusals, kept verbatim here."""
    for phrase in [
        "Five steps on the 8-device mesh",
        "in steps of 1, 2 or 3",
        "In the program compiled for the CPU backend, remat cuts them by about half",
        "the CPU program with remat runs twice as many all-gathers inside the layer loop",
        'three heads on a `tensor` axis of two, say, or a rules table without `"mlp"`',
        "The whole step runs. The first loss is the one of `Auto` axes to the bit",
        "a device's temporaries are smaller than the parameters alone",
    ]:
        assert phrase in prose, phrase
