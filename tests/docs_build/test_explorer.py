"""The explorer's grid (docs_build/explorer.py): large, varied, answered by JAX, and shown on
the page as a table of examples and a count that agree with it. The browser tests compare the
page's script with every answer (tests/browser/test_explorer.py)."""

import math
from pathlib import Path

from jax import P

from docs_build import explorer

PAGE = Path(__file__).resolve().parents[2] / "docs" / "tools" / "sharding-explorer.md"


def test_the_grid_is_large_and_holds_every_kind_of_case():
    grid, answers = explorer.cases(), explorer.expected()
    assert len(grid) == len(answers) >= explorer.MINIMUM_CASES
    kinds = {a["error"].split(":")[0] if "error" in a else "ok" for a in answers}
    assert kinds == {"ok", "IndivisibleError", "DuplicateSpecError"}
    assert sum("error" not in a for a in answers) > len(answers) / 2
    assert {len(c["shape"]) for c in grid} == {1, 2, 3, 4}
    assert {len(c["mesh"]) for c in grid} == {1, 2, 3}
    assert max(math.prod(c["mesh"]) for c in grid) == explorer.DEVICES
    assert {c["dtype"] for c in grid} == set(explorer.DTYPES)
    # ordered tuples of axes, which decide which device gets which block
    assert any(e and len(e) > 1 for c in grid for e in c["spec"])


def test_the_grid_is_the_same_on_every_run():
    assert explorer.cases() == explorer.cases()


def test_each_answer_covers_the_array_once_per_copy():
    for case, answer in zip(explorer.cases(), explorer.expected(), strict=True):
        if "error" in answer:
            continue
        held = sum(math.prod(b - a for a, b in block) for block in answer["blocks"])
        distinct = len({str(block) for block in answer["blocks"]})
        copies = math.prod(case["mesh"]) // distinct
        assert held == math.prod(case["shape"]) * copies


def test_specs_are_written_as_jax_writes_them():
    for case in explorer.cases()[:120]:
        spec = [
            None if e is None else e[0] if len(e) == 1 else tuple(e)
            for e in case["spec"]
        ]
        assert explorer.spec_text(case["spec"]) == repr(P(*spec))


def test_the_page_shows_the_examples_and_the_grids_size():
    text = PAGE.read_text(encoding="utf-8")
    assert explorer.MARKER in text and explorer.COUNT in text
    filled = explorer.fill(text)
    assert f"answers to {len(explorer.cases()):,} cases" in " ".join(filled.split())
    table = explorer.examples_table().splitlines()
    assert len(table) == 2 + len(explorer.EXAMPLES)
    answers = explorer.expected(explorer.example_cases())
    for row, answer in zip(table[2:], answers, strict=True):
        if "error" in answer:
            assert f"`{answer['error'].split(':')[0]}`" in row
        else:
            assert f"| {answer['bytes']:,} |" in row


def test_other_pages_pass_through_without_drawing_the_grid(monkeypatch):
    """The hook and the notebooks pass every page through `fill`."""

    def refuse():
        raise AssertionError("drew the grid for a page without the explorer's markers")

    monkeypatch.setattr(explorer, "cases", refuse)
    assert explorer.fill("# A page\n\nNo markers.\n") == "# A page\n\nNo markers.\n"
