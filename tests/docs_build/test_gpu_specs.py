"""The GPU spec files (docs_build/compiled/specs/) against the figures NVIDIA publishes for
each card (docs_build/costmodel.py's LINKS, each with its source), and a spec with a missing
field stopped with its name."""

import pytest

from docs_build import costmodel as cm
from docs_build.compiled import pages
from docs_build.compiled import targets as tg


@pytest.mark.parametrize("card", list(tg.CARDS))
def test_each_spec_file_agrees_with_the_published_card(card):
    published = cm.LINKS[card]
    text = tg.spec_text(card)
    assert "Source:" in text.split("gpu_device_info")[0]  # the header names its source
    assert tg.spec_value(card, "core_count") == published.cores
    bandwidth = tg.spec_value(card, "memory_bandwidth")
    assert bandwidth == pytest.approx(published.memory_per_second, rel=0.001)
    # "80 GB": the card's 80 GiB of HBM, of which the driver shows a little less
    memory = tg.spec_value(card, "device_memory_size")
    assert 0.95 * 80 * 2**30 <= memory <= 80 * 2**30
    assert published.memory_bytes == 80e9
    # NVLink and the network, per GPU, one direction
    assert published.within > published.between > 0


def test_the_spec_table_shows_each_cards_spec_and_source():
    table = pages.fill(pages.SPECS_TABLE)
    for card in tg.CARDS:
        row = next(
            line
            for line in table.splitlines()
            if line.startswith(f"| {cm.LINKS[card].chip} |")
        )
        assert f"| {cm.LINKS[card].cores} |" in row
        assert f"specs/{tg.CARDS[card]}.txtpb` and {cm.LINKS[card].source}" in table
        assert row.endswith(f"| [NVIDIA]({cm.LINKS[card].url}) |")
    scaling = pages.results.__module__  # the table is on the scaling page
    assert scaling and pages.SPECS_TABLE in (
        tg.HERE.parents[1] / "docs" / "training" / "scaling.md"
    ).read_text(encoding="utf-8")


def test_a_spec_missing_a_field_is_refused_with_its_name(tmp_path, monkeypatch):
    text = tg.spec_text("h100").replace("  core_count: 132\n", "")
    (tmp_path / "h100_sxm.txtpb").write_text(text)
    monkeypatch.setattr(tg, "SPECS", tmp_path)
    with pytest.raises(tg.TargetError, match=r"h100_sxm.txtpb has no core_count"):
        tg.spec_text("h100")


def test_a_comment_does_not_count_as_a_field(tmp_path, monkeypatch):
    text = tg.spec_text("a100").replace(
        "  l2_cache_size: 41943040\n", "  # l2_cache_size: 41943040\n"
    )
    (tmp_path / "a100_sxm_80.txtpb").write_text(text)
    monkeypatch.setattr(tg, "SPECS", tmp_path)
    with pytest.raises(tg.TargetError, match=r"has no l2_cache_size"):
        tg.spec_text("a100")


def test_an_unknown_card_or_target_says_what_to_use():
    with pytest.raises(tg.TargetError, match=r"no spec file for GPU card 'b300'"):
        tg.spec_text("b300")
    with pytest.raises(tg.TargetError, match=r"unknown target 'x100:1x8'.*h100:1x8"):
        tg.family("x100:1x8")
    with pytest.raises(tg.TargetError, match=r"2 nodes of h100:1x8"):
        tg.nodes("2 nodes of h100:2x8")


def test_gpu_targets_need_jax_platforms_cpu(monkeypatch):
    monkeypatch.setenv("JAX_PLATFORMS", "")
    with pytest.raises(tg.TargetError, match=r"JAX_PLATFORMS=cpu"):
        tg.devices("h100:1x8")
