"""Setup folds (docs_build.folds): collapsed on the site, and still run, tested and in the
notebook like any other block; other folds (hints, solutions) stay prose."""

import json

import markdown
import pytest

import conftest
from docs_build import folds, notebooks, outputs
from docs_build import hooks as site_hooks

PAGE = """\
# A page

??? note "Setup: the helpers from earlier pages"

    ```{.python}
    --8<-- "snippets/cpu_devices.py:setup"
    ```

    ```{.python}
    print("from the fold")
    ```

The idea comes first.

```{.python}
print(jax.device_count())
```

??? success "Solution"

    ```{.python}
    raise SystemExit("a solution is not run")
    ```
"""


@pytest.fixture
def page(tmp_path, monkeypatch):
    docs = tmp_path / "docs"
    (docs / "guide").mkdir(parents=True)
    path = docs / "guide" / "page.md"
    path.write_text(PAGE, encoding="utf-8")
    monkeypatch.setattr(outputs, "DOCS", docs)
    monkeypatch.setattr(notebooks, "NOTEBOOKS", docs / "notebooks")
    return path


def test_unfold_keeps_every_line_in_place():
    opened = folds.unfold(PAGE).split("\n")
    assert len(opened) == len(PAGE.split("\n"))
    assert opened[2] == "**Setup: the helpers from earlier pages**"
    assert opened[4] == "```{.python}"  # moved out of the fold
    assert opened[12] == "The idea comes first."
    assert (
        opened[-3] == '    raise SystemExit("a solution is not run")'
    )  # not a setup fold


def test_the_build_runs_the_folded_blocks_and_not_the_solution(page):
    blocks = outputs.page_blocks(page)
    assert [b.line for b in blocks] == [5, 9, 15]
    assert blocks[0].includes == ("snippets/cpu_devices.py:setup",)
    assert blocks[1].source == 'print("from the fold")\n'
    assert all("SystemExit" not in b.source for b in blocks)


def test_pytest_markdown_docs_runs_the_folded_blocks_in_the_page_program():
    tokens = conftest.pytest_markdown_docs_markdown_it().parse(PAGE)
    (program,) = [t.content for t in tokens if t.type == "fence"]
    assert "# ---- block 1, page line 5: snippets/cpu_devices.py:setup" in program
    assert 'print("from the fold")' in program
    assert program.rstrip().endswith("print(jax.device_count())")


def test_the_notebook_has_the_folded_blocks_as_code_cells(page):
    nb = json.loads(notebooks.build(page, "https://example.org/", "https://x/y"))
    code = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    assert len(code) == 3 and code[1] == 'print("from the fold")'
    prose = "".join("".join(c["source"]) for c in nb["cells"])
    assert "**Setup: the helpers from earlier pages**" in prose
    assert "SystemExit" in prose  # the solution is shown, as before, not run


def test_output_of_a_folded_block_stays_in_the_fold_on_the_site(page):
    lines = PAGE.split("\n")
    for block in reversed(outputs.page_blocks(page)):
        shown = site_hooks.chunk_markdown({"text": f"out {block.index}\n"})
        lines = site_hooks.place_output(lines, block, shown)
    html = markdown.markdown(
        "\n".join(lines),
        extensions=[
            "admonition",
            "pymdownx.details",
            "pymdownx.superfences",
            "pymdownx.snippets",
        ],
        extension_configs={"pymdownx.snippets": outputs.SNIPPETS_OPTIONS},
    )
    before, fold = html.split('<details class="note">', 1)
    fold, rest = fold.split("</details>", 1)
    assert before == "<h1>A page</h1>\n"
    assert "<summary>Setup: the helpers from earlier pages</summary>" in fold
    assert "jax_num_cpu_devices" in fold  # the included code, in the fold
    assert "out 0" in fold and "out 1" in fold  # and what it printed
    assert "out 2" in rest and "The idea comes first." in rest
