"""The FSDP page's drawings of its step as the H100 and v5e compilers ordered it (the overlap
page's charts, from the committed compiled results), and the sentence that introduces them."""

from pathlib import Path

from docs_build.compiled import overlap
from docs_build.compiled.results import results

PAGE = Path(__file__).resolve().parents[3] / "docs" / "training" / "fsdp.md"


def test_the_page_draws_the_step_as_the_h100_and_v5e_compilers_ordered_it():
    text = PAGE.read_text(encoding="utf-8")
    drawn = {(t.strip(), n.strip()) for t, n in overlap.CHART.findall(text)}
    assert drawn == {("h100:1x8", "FSDP"), ("v5e:2x4", "FSDP")}
    data = results()
    h100 = overlap.find("h100:1x8", "FSDP", data)
    assert {c["form"] for c in h100["collectives"]} == {"async"}
    spans, _ = overlap.spans(overlap.find("v5e:2x4", "FSDP", data)["schedule"])
    in_flight = [s for s in spans if s.asynchronous]
    assert [(s.kind, s.matmuls) for s in in_flight] == [("all-gather", 1)]
    said = " ".join(text.split())
    assert "on 8 H100s every collective of the step is a start and a done" in said
    assert (
        "on v5e:2x4 one gather, the second kernel's, is in flight over the first "
        "layer's forward matmul" in said
    )
    for target, name in drawn:  # each draws, with its words
        assert "<svg" in overlap.chart(target, name, data)
