"""Published open models as the page's Config, each beside where its numbers come from.

Run `python -m snippets.advanced.transformer.presets` to print what the page shows.
"""

import dataclasses

# The page shows these by including the sections of model.py.
from snippets.advanced.transformer.model import Config, param_count

# --8<-- [start:presets]
HF = "https://huggingface.co/meta-llama"
MODEL_CARDS = "https://github.com/meta-llama/llama-models/blob/main/models"


@dataclasses.dataclass(frozen=True)
class Preset:
    config: Config
    config_source: str  # the published config.json the sizes are copied from
    published: str  # the parameter count as its source writes it
    published_source: str


PRESETS = {
    "Llama-3-8B": Preset(
        Config(
            vocab=128_256,
            d_model=4096,
            heads=32,
            kv_heads=8,
            mlp=14_336,
            layers=32,
            seq=8192,  # max_position_embeddings
            gated=True,
        ),
        config_source=f"{HF}/Meta-Llama-3-8B/blob/main/config.json",
        published="8.03B",  # the model page's safetensors size
        published_source=f"{HF}/Meta-Llama-3-8B",
    ),
    "Llama-3-70B": Preset(
        Config(
            vocab=128_256,
            d_model=8192,
            heads=64,
            kv_heads=8,
            mlp=28_672,
            layers=80,
            seq=8192,
            gated=True,
        ),
        config_source=f"{HF}/Meta-Llama-3-70B/blob/main/config.json",
        published="70.6B",
        published_source=f"{HF}/Meta-Llama-3-70B",
    ),
    "Llama-3.2-1B": Preset(
        Config(
            vocab=128_256,
            d_model=2048,
            heads=32,
            kv_heads=8,
            mlp=8192,
            layers=16,
            seq=131_072,
            gated=True,
            tied=True,  # tie_word_embeddings
        ),
        config_source=f"{HF}/Llama-3.2-1B/blob/main/config.json",
        published="1.23B",  # Meta's model card
        published_source=f"{MODEL_CARDS}/llama3_2/MODEL_CARD.md",
    ),
}


def preset(name: str) -> Config:
    """The Config of a published model, by name."""
    if name not in PRESETS:
        raise ValueError(f"No preset {name!r}: pick one of {sorted(PRESETS)}.")
    return PRESETS[name].config


# --8<-- [end:presets]


def published_count(p: Preset) -> float:
    """The published figure as a number: "8.03B" is 8.03e9."""
    if not p.published.endswith("B"):
        raise ValueError(f"Expected a count in billions such as '8.03B': {p.published}")
    return float(p.published[:-1]) * 1e9


def show_presets():
    # --8<-- [start:show-presets]
    print(f"{'model':<14}{'by formula':>16}{'published':>11}  published by")
    for name, p in PRESETS.items():
        n = param_count(preset(name))
        source = p.published_source.removeprefix("https://")
        print(f"{name:<14}{n:>16,}{p.published:>11}  {source}")
    # --8<-- [end:show-presets]


def main() -> None:
    show_presets()


if __name__ == "__main__":
    main()
