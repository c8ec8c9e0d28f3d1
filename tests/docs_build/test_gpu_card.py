"""The record of a real H100 (results/gpu_card.json, written by verify_gpu) against today's
committed GPU programs, and the sentences the pages build from it."""

import copy
import json
import re
from pathlib import Path

import jax
import pytest

from docs_build import costmodel as cm
from docs_build.compiled import card
from docs_build.compiled.driver import RESULTS

ROOT = Path(__file__).resolve().parents[2]


def committed_count() -> int:
    return len(card._committed(card.record()["compared_with"]["target"]))


def test_on_the_card_every_program_compiled_as_committed():
    """scaling.md: from the spec file and from the card's own spec, every program had the
    same collectives and the same temporaries to the byte."""
    found = card.compare()
    for stage in ("file spec", "card spec"):
        said = found[stage]
        assert said["programs"] == committed_count() - len(card.newer()) == 46
        assert said["same"] == said["equal"] == said["programs"], stage


def test_as_eight_nodes_two_programs_change_their_collectives_and_some_temporaries_move():
    """scaling.md: as 8 nodes of one GPU, XLA's collective matmul is not made (the
    windowed loop of collective-permutes of the one-node program is one all-gather), and
    the ragged dispatch gains an all-to-all and a second all-gather."""
    said = card.compare()["8 nodes"]
    assert said["programs"] == committed_count() - len(card.newer())
    assert said["same"] == said["programs"] - 2
    assert 0 < said["programs"] - said["equal"] < said["programs"]
    # the widest move is a changed program's; where the collectives stay, under 10%
    assert said["largest_program"] in ("XLA collective matmul", "MoE ragged dispatch")
    rows, found = card._committed("h100:1x8"), card.record()["found"]["8 nodes"]
    kept = [n for n in found if card.collectives(found[n]) == card.collectives(rows[n])]
    moved = [
        abs(found[n]["temp_bytes"] / rows[n]["memory"]["temp_bytes"] - 1)
        for n in kept
        if rows[n]["memory"]["temp_bytes"]
    ]
    assert 0 < max(moved) < 0.10
    text = card.stage_said("8 nodes")
    assert text == (
        f"the collectives stayed the same in {said['same']} of {said['programs']} "
        "programs; they changed in “MoE ragged dispatch” (1 all-gather and 1 "
        "ragged-all-to-all on one node, 2 all-gather and 1 all-to-all and 1 "
        "ragged-all-to-all as 8 nodes), “XLA collective matmul” (8 collective-permute "
        "on one node, 1 all-gather as 8 nodes)"
    )
    page = (ROOT / "docs/training/scaling.md").read_text()
    assert "Compiled as 8 nodes of\none GPU each, <!-- gpu-card: nodes said -->" in page


def test_the_eight_nodes_clause_turns_with_the_data():
    data = copy.deepcopy(card.record())
    rows = card._committed(data["compared_with"]["target"])
    found = data["found"]["8 nodes"]
    for name in ("XLA collective matmul", "MoE ragged dispatch"):
        found[name]["collectives"] = rows[name]["collectives"]
    assert card.stage_said("8 nodes", data) == "the collectives stayed the same"


def test_the_autotuned_pass_is_recorded_as_not_made_with_why():
    """scaling.md: on two cards the mocked pass finished nothing; on the second, four
    small programs, not the first in seven minutes."""
    data = card.record()
    assert "autotuned" not in data["stages"]
    said = " ".join(data["not_made"]["autotuned"])
    assert "four small programs" in said and "after 420 s" in said
    page = (ROOT / "docs/training/scaling.md").read_text()
    assert "not the first of them in seven\nminutes on the second" in page


def test_a_different_committed_program_is_seen():
    data = copy.deepcopy(card.record())
    first = next(iter(data["found"]["file spec"]))
    data["found"]["file spec"][first]["collectives"] = []
    data["found"]["file spec"][first]["temp_bytes"] += 1
    said = card.compare(data)["file spec"]
    assert said["same"] == said["equal"] == said["programs"] - 1


def test_a_program_gone_from_the_committed_results_is_an_error():
    data = copy.deepcopy(card.record())
    data["found"]["card spec"]["no such program"] = {"collectives": [], "temp_bytes": 1}
    with pytest.raises(card.CardRecordError, match="no such program"):
        card.compare(data)


def test_the_card_ran_the_pinned_versions():
    versions = card.record()["machine"]["versions"]
    assert versions["jax"] == versions["jaxlib"] == jax.__version__
    stored = json.loads((RESULTS / "gpu.json").read_text())["versions"]
    assert versions["jax-cuda13-plugin"] == stored["jax-cuda12-plugin"]
    assert versions["flax"] == stored["flax"] and versions["optax"] == stored["optax"]


def test_the_out_of_memory_errors_are_the_cards():
    probe = card.record()["probe"]
    eager, jitted = probe["eager"], probe["jit"]
    for said in (eager, jitted):
        assert said["type"] == "JaxRuntimeError"
        assert said["message"].startswith("RESOURCE_EXHAUSTED: Out of memory")
        assert f"{said['bytes'] / 2**30:.2f}GiB" in said["message"]
    # "whose result alone was larger than the card ... its error came when it was waited for"
    memory = int(card.record()["card_spec"].split("device_memory_size: ")[1].split()[0])
    assert jitted["output_bytes"] == jitted["bytes"] > memory
    assert jitted["compiled"] and jitted["raised_at"] == "wait"
    assert eager["bytes"] > memory
    block = card.oom_block("eager")
    assert block.startswith("```text\nJaxRuntimeError: RESOURCE_EXHAUSTED")


def test_the_matmul_is_priced_against_the_published_peak():
    said = card.record()["probe"]["matmul"]
    assert said["flops"] == 2 * said["size"] ** 3 and said["dtype"] == "bfloat16"
    rate = said["flops"] / said["seconds"]
    assert 0.3 < rate / cm.H100.bf16_flops < 1  # below the peak, as a floor must be
    text = card.matmul_text()
    assert text == (
        f"{rate / 1e12:,.0f} TFLOP/s, {rate / cm.H100.bf16_flops:.0%} of the published "
        "989.5"
    )


def test_the_pages_fill_every_card_marker():
    for page in ("docs/training/scaling.md", "docs/guides/out-of-memory.md"):
        text = (ROOT / page).read_text()
        assert card.MARKER.search(text), page
        filled = card.fill(text)
        assert not card.MARKER.search(filled)
        assert "NVIDIA H100 80GB HBM3" in filled
    filled = card.fill((ROOT / "docs/guides/out-of-memory.md").read_text())
    assert "came when the result was waited for, as on the CPU here" in filled


def test_an_unknown_marker_says_so():
    with pytest.raises(card.CardRecordError, match="unknown gpu-card marker 'speed'"):
        card.fill("<!-- gpu-card: speed -->")
    with pytest.raises(card.CardRecordError, match="no 'both' out-of-memory error"):
        card.oom_block("both")


def test_the_table_counts_what_compare_counts():
    table = card.compiles_table()
    for stage, said in card.compare().items():
        row = next(
            r for r in table.splitlines() if r.startswith(f"| {card.STAGES[stage]}")
        )
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[1:4] == [
            str(said["programs"]),
            str(said["same"]),
            str(said["equal"]),
        ]
    assert re.search(r"driver 580\.\d+\.\d+", table)


def test_the_remat_record_covers_todays_policies_on_one_card():
    """card_remat ran every policy of model.REMAT_POLICIES ("full" is True's other name),
    each on the same card, at the planner grid's size it names."""
    from docs_build.planner_grid import CONFIGS
    from snippets.advanced.transformer import model

    data = card.remat_record()
    wanted = {str(p) for p in model.REMAT_POLICIES if p != "full"}
    assert set(data["policies"]) == wanted
    assert {p["device"] for p in data["policies"].values()} == {"NVIDIA H100 80GB HBM3"}
    assert (data["fields"], data["batch"]) == (
        CONFIGS[data["config"]][0],
        CONFIGS[data["config"]][1],
    )
    for said in data["policies"].values():
        assert len(said["all_seconds"]) == data["timed"]
        first = said["losses"][0]  # remat changes what is kept, not the first step
        assert abs(first - data["policies"]["False"]["losses"][0]) < 1e-3 * abs(first)


def test_the_remat_sentence_follows_the_record():
    rows = card.remat_rows()
    said = card.remat_said()
    none, full = rows["no remat"], rows["full remat"]
    word = "faster" if full["ms"] < none["ms"] else "slower"
    assert said.startswith(f"Full remat was {word} than no remat")
    assert f"{full['ms']:.1f} ms against {none['ms']:.1f} ms" in said
    assert f"The slowest was {max(rows, key=lambda k: rows[k]['ms'])}," in said
    # the peak the allocator saw is what the compiled memory analysis foretold
    assert all(abs(r["predicted"]) < 0.02 for r in rows.values())
    assert all(r["spread"] < 0.02 for r in rows.values())


def test_the_remat_sentence_turns_with_the_data():
    data = copy.deepcopy(card.remat_record())
    policies = data["policies"]
    policies["True"]["seconds"] = policies["False"]["seconds"] * 2
    assert card.remat_said(data).startswith("Full remat was slower than no remat")
    policies["dots"]["error"] = "boom"
    with pytest.raises(card.CardRecordError, match="dots"):
        card.remat_rows(data)


def test_the_remat_page_shows_the_cards_table_and_sentence():
    page = (ROOT / "docs/advanced/remat.md").read_text()
    assert "<!-- gpu-card: remat table -->" in page
    assert "<!-- gpu-card: remat said -->. These are one card's times" in page
    filled = card.fill(page)
    assert "| offload |" in filled and "H100 80GB HBM3" in filled


def test_programs_added_after_the_card_are_named_as_compiled_here_only():
    """scaling.md names the programs the card never compiled. Today there are none (the card
    of stop 42 compiled all 46, the expert-parallel FSDP page's two MoE steps among them); a
    program the record lacks is named."""
    assert card.newer() == [] and card.newer_text() == "none"
    assert card.newer_said() == (
        "The card compiled every one-node GPU program the site holds today"
    )
    data = copy.deepcopy(card.record())
    for stage in data["stages"]:
        for name in ("MoE step, FSDP x expert", "MoE step, data x expert"):
            del data["found"][stage][name]
    assert card.newer(data) == ["MoE step, FSDP x expert", "MoE step, data x expert"]
    assert card.newer_said(data) == (
        "The programs added to the site since then were compiled here only "
        "(2: “MoE step, FSDP x expert”, “MoE step, data x expert”)"
    )
    page = (ROOT / "docs/training/scaling.md").read_text()
    assert "moved.\n<!-- gpu-card: newer said -->:\n" in page
