"""Parameter counts by formula, against the models' own shapes and the published figures."""

import dataclasses
import itertools
import math
import re
from pathlib import Path

import jax
import pytest
from flax import nnx

from snippets.advanced.transformer import presets
from snippets.advanced.transformer.model import Config, Transformer, param_count
from tests.advanced.transformer.printed import quietly

PAGE = Path(__file__).resolve().parents[3] / "docs" / "advanced" / "transformer.md"

# Every combination of the three options, on small sizes that differ from each other (so a
# formula that swapped two sizes would miscount).
SMALL = [
    Config(
        vocab=48, d_model=24, heads=6, mlp=40, layers=3, kv_heads=kv, gated=g, tied=t
    )
    for kv, g, t in itertools.product((None, 3, 1), (False, True), (False, True))
]


def counted(cfg: Config) -> int:
    """The parameters of the model's abstract state (nnx.eval_shape allocates nothing)."""
    with nnx.use_eager_sharding(False):
        abstract = nnx.eval_shape(lambda: Transformer(cfg, rngs=nnx.Rngs(0)))
    return sum(
        math.prod(p.shape) for p in jax.tree.leaves(nnx.state(abstract, nnx.Param))
    )


@pytest.mark.parametrize(
    "cfg", SMALL, ids=lambda c: f"{c.kv}kv-g{c.gated:d}-t{c.tied:d}"
)
def test_the_formula_counts_the_models_parameters(cfg):
    assert param_count(cfg) == counted(cfg)


def test_each_option_changes_the_count_by_its_matrices():
    cfg = SMALL[0]  # multi-head, GELU, untied
    d, k, m = cfg.d_model, cfg.head_dim, cfg.mlp
    base = param_count(cfg)
    gqa = dataclasses.replace(cfg, kv_heads=3)
    assert base - param_count(gqa) == cfg.layers * 2 * d * (cfg.heads - 3) * k
    assert (
        param_count(dataclasses.replace(cfg, gated=True)) - base == cfg.layers * d * m
    )
    assert base - param_count(dataclasses.replace(cfg, tied=True)) == cfg.vocab * d


@pytest.mark.parametrize("name", list(presets.PRESETS))
def test_each_preset_is_the_model_the_formula_counts(name):
    cfg = presets.preset(name)
    assert param_count(cfg) == counted(cfg)


EXACT = {  # what the formula gives, for the report and the page's table
    "Llama-3-8B": 8_030_261_248,
    "Llama-3-70B": 70_553_706_496,
    "Llama-3.2-1B": 1_235_814_400,
}


@pytest.mark.parametrize("name", list(presets.PRESETS))
def test_each_preset_is_within_half_a_percent_of_its_published_figure(name):
    p = presets.PRESETS[name]
    n = param_count(p.config)
    assert n == EXACT[name]
    assert abs(n - presets.published_count(p)) <= 5e-3 * presets.published_count(p)
    if "huggingface.co" in p.published_source:
        # Hugging Face rounds its count to three significant digits: so does the formula.
        assert f"{n / 1e9:.3g}B" == p.published


def test_the_presets_are_llama_shaped():
    for name, p in presets.PRESETS.items():
        cfg = p.config
        assert cfg.gated and cfg.kv == 8 and cfg.vocab == 128_256, name
        assert cfg.head_dim in (64, 128), name
        assert p.config_source.endswith("/config.json"), name
        assert p.published_source.startswith("https://"), name
    assert [p.config.tied for p in presets.PRESETS.values()] == [False, False, True]


def test_an_unknown_preset_is_refused_with_the_known_names():
    with pytest.raises(
        ValueError,
        match=r"^No preset 'Llama-3-7B': pick one of \['Llama-3-70B', 'Llama-3-8B', "
        r"'Llama-3.2-1B'\]\.$",
    ):
        presets.preset("Llama-3-7B")
    assert presets.preset("Llama-3-8B") is presets.PRESETS["Llama-3-8B"].config


def test_the_printed_table():
    _, out = quietly(presets.show_presets)
    rows = [re.split(r"\s{2,}", line.strip()) for line in out.splitlines()]
    assert rows[0] == ["model", "by formula", "published", "published by"]
    assert rows[1:] == [
        [
            name,
            f"{EXACT[name]:,}",
            p.published,
            p.published_source.removeprefix("https://"),
        ]
        for name, p in presets.PRESETS.items()
    ]


def test_the_page_says_what_the_table_shows():
    prose = " ".join(PAGE.read_text().split())
    assert (
        "Each agrees with its published figure within 0.5%, and the two from" in prose
    )
    hf = [p for p in presets.PRESETS.values() if "huggingface.co" in p.published_source]
    assert (
        len(hf) == 2 and "the two from Hugging Face's model pages to all three" in prose
    )


@pytest.mark.parametrize(
    "fields, message",
    [
        (
            {"d_model": 30},
            r"^heads \(4\) must divide d_model \(30\): change one of them",
        ),
        ({"kv_heads": 3}, r"^kv_heads \(3\) must divide heads \(4\), so that each"),
        ({"kv_heads": 0}, r"^kv_heads must be a positive integer, not 0\.$"),
        ({"layers": 0}, r"^layers must be a positive integer, not 0\.$"),
        ({"mlp": -8}, r"^mlp must be a positive integer, not -8\.$"),
        ({"heads": 2.0}, r"^heads must be a positive integer, not 2\.0\.$"),
        ({"vocab": True}, r"^vocab must be a positive integer, not True\.$"),
    ],
)
def test_a_config_that_cannot_form_a_model_is_refused(fields, message):
    with pytest.raises(ValueError, match=message):
        Config(**fields)


def test_kv_heads_defaults_to_one_per_query_head():
    assert Config().kv == Config().heads == 4
    assert Config(kv_heads=1).kv == 1
