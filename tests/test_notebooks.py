"""docs_build.notebooks: every guide page as a notebook, rewritten only when its code changes."""

import functools
import http.server
import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from docs_build import graders, notebooks, outputs
from snippets.exercises.registry import EXERCISES

ROOT = Path(__file__).resolve().parent.parent
SITE = "https://example.org/docs/"
REPO = "https://github.com/owner/repo"
PAGE = """\
# A page

```{.python}
--8<-- "snippets/cpu_devices.py:setup"
```

!!! tip "Why eight"

    Because [the basics page](../basics/devices-and-meshes.md#eight-devices-on-one-cpu) says so.

    A second paragraph of the tip:

    ```{.python}
    --8<-- "snippets/cpu_devices.py:setup"
    ```

=== "A tab"

    Tab text.

    ```{.bash}
    JAX_NUM_CPU_DEVICES=8 python my_script.py
    ```

```{.python}
print(jax.device_count())  # (1)!
```

1.  An annotation.
"""


@pytest.fixture
def docs(tmp_path, monkeypatch):
    folder = tmp_path / "docs"
    (folder / "guide").mkdir(parents=True)
    (folder / "guide" / "page.md").write_text(PAGE, encoding="utf-8")
    (folder / "guide" / "prose.md").write_text("# Only prose\n", encoding="utf-8")
    monkeypatch.setattr(outputs, "DOCS", folder)
    monkeypatch.setattr(notebooks, "NOTEBOOKS", folder / "notebooks")
    return folder


def cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def test_a_page_becomes_a_notebook_of_its_prose_and_blocks(docs):
    assert [
        p.relative_to(docs).as_posix() for p in notebooks.write_all(SITE, REPO)
    ] == [
        "notebooks/guide/page.ipynb"  # the page without code gets no notebook
    ]
    nb = json.loads((docs / "notebooks/guide/page.ipynb").read_text(encoding="utf-8"))
    kinds = [c["cell_type"] for c in nb["cells"]]
    assert kinds == ["markdown", "code", "markdown", "code", "markdown"]
    first, setup, prose, code, _ = ("".join(c["source"]) for c in nb["cells"])
    assert first.startswith(
        "# A page\n\nThis notebook is [a page](https://example.org/docs/"
    )
    assert (
        "colab.research.google.com/github/owner/repo/blob/notebooks/guide/page.ipynb"
        in first
    )
    assert setup.startswith("# Tested with jax ")
    assert "    %pip install --quiet jax==" in setup  # on Colab only
    # The first code cell names the versions, installs them on Colab, then sets up devices.
    assert setup.endswith(
        outputs.page_blocks(docs / "guide/page.md")[0].source.rstrip("\n")
    )
    assert prose.startswith("> **Why eight**\n>\n> Because")  # as Jupyter can show it
    assert "> ```python\n> import jax" in prose
    assert "> A second paragraph of the tip:" in prose
    assert '> jax.config.update("jax_num_cpu_devices", 8)' in prose  # includes expanded
    assert "**A tab**\n\nTab text." in prose
    assert (
        "```bash\nJAX_NUM_CPU_DEVICES=8 python" in prose
    )  # shown, never run as %%bash
    assert (
        "(https://example.org/docs/basics/devices-and-meshes/#eight-devices-on-one-cpu)"
        in prose
    )
    assert code == "print(jax.device_count())"  # the annotation marker is gone
    blocks = outputs.page_blocks(docs / "guide/page.md")
    assert nb["metadata"]["sharding_docs"]["key"] == outputs.cache_key(blocks)
    assert nb["metadata"]["kernelspec"]["name"] == "python3"


def test_only_the_notebook_whose_code_changed_is_rewritten(docs):
    (docs / "guide" / "other.md").write_text(
        PAGE.replace("device_count()", "devices()"), encoding="utf-8"
    )
    assert len(notebooks.write_all(SITE, REPO)) == 2
    before = {p: p.read_bytes() for p in (docs / "notebooks").rglob("*.ipynb")}
    assert (
        notebooks.write_all(SITE, REPO) == []
    )  # same content: left alone, not re-executed
    page = docs / "guide" / "page.md"
    page.write_text(
        PAGE.replace("print(jax.device_count())", "print(jax.devices())"), "utf-8"
    )
    assert notebooks.write_all(SITE, REPO) == [docs / "notebooks/guide/page.ipynb"]
    after = {p: p.read_bytes() for p in (docs / "notebooks").rglob("*.ipynb")}
    changed = [p.name for p in before if before[p] != after[p]]
    assert changed == ["page.ipynb"]


def test_a_page_that_is_gone_takes_its_notebook_with_it(docs):
    notebooks.write_all(SITE, REPO)
    (docs / "guide" / "page.md").unlink()
    notebooks.write_all(SITE, REPO)
    assert list((docs / "notebooks").rglob("*.ipynb")) == []


def test_links_under_a_guide_page_title():
    links = notebooks.links_markdown(
        "basics/named-sharding.md", REPO, from_notebook=False
    )
    assert "[view it with outputs](../notebooks/basics/named-sharding.ipynb)" in links
    assert (
        '<a href="../../notebooks/basics/named-sharding/named-sharding.ipynb" download>'
        in links
    )
    assert "github/owner/repo/blob/notebooks/basics/named-sharding.ipynb" in links
    index = notebooks.links_markdown("exercises/index.md", REPO, from_notebook=False)
    assert '<a href="../notebooks/exercises/index.ipynb" download>' in index


def test_cells_carry_what_each_block_printed_and_drew(docs):
    ran = [[{"text": "8\n"}], [{"text": "a\n"}, {"svg": "<svg/>", "alt": "a diagram"}]]
    nb = json.loads(notebooks.build(docs / "guide/page.md", SITE, REPO, ran))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert [c["execution_count"] for c in code] == [1, 2]
    assert code[0]["outputs"] == [
        {"output_type": "stream", "name": "stdout", "text": ["8\n"]}
    ]
    assert code[1]["outputs"][1]["output_type"] == "display_data"
    assert code[1]["outputs"][1]["data"] == {  # ipynb JSON keeps text as lists of lines
        "image/svg+xml": ["<svg/>"],
        "text/plain": ["a diagram"],
    }
    with pytest.raises(outputs.SnippetError, match="2 code cells but 1 blocks ran"):
        notebooks.build(docs / "guide/page.md", SITE, REPO, ran[:1])


@pytest.mark.slow
def test_mkdocs_jupyter_renders_the_stored_outputs_without_executing(tmp_path):
    """The plugin settings of mkdocs.yml: a cell that would fail shows its stored output."""
    import nbformat

    assert "      execute: false\n" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    docs = tmp_path / "docs"
    (docs / "notebooks").mkdir(parents=True)
    (docs / "index.md").write_text("# Home\n", encoding="utf-8")
    cell = nbformat.v4.new_code_cell("1 / 0")  # would raise, were it run
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="stored 42\n")]
    nb = nbformat.v4.new_notebook(cells=[cell])
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "P",
        "language": "python",
    }
    nbformat.write(nb, docs / "notebooks" / "stored.ipynb")
    config = textwrap.dedent(
        """\
        site_name: t
        theme: {name: material, font: false}
        not_in_nav: /notebooks/
        plugins:
          - mkdocs-jupyter:
              include: ["*.ipynb"]
              execute: false
              allow_errors: false
              cache: false
        """
    )
    (tmp_path / "mkdocs.yml").write_text(config, encoding="utf-8")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-q", "-d", str(tmp_path / "site")],
        cwd=tmp_path,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    html = (tmp_path / "site/notebooks/stored/index.html").read_text(encoding="utf-8")
    assert "stored 42" in html and "ZeroDivisionError" not in html


# Every page with code, the exercises' included, has a notebook; except a page whose code
# imports this project, which runs only in a clone.
CODE_PAGES = [
    page
    for page in outputs.doc_pages()
    if (blocks := outputs.page_blocks(page))
    and not notebooks.needs_the_repository(blocks)
]


def test_only_the_exercise_index_needs_the_repository():
    """It runs the grader on files of the repository; every other page pastes anywhere."""
    needing = [
        page.relative_to(outputs.DOCS).as_posix()
        for page in outputs.doc_pages()
        if (blocks := outputs.page_blocks(page))
        and notebooks.needs_the_repository(blocks)
    ]
    assert needing == ["exercises/index.md"]


# Daily: the per-push build runs the same blocks as one program each (the golden outputs);
# this runs them again through Jupyter, as a reader of the notebook does.
@pytest.mark.slow
@pytest.mark.daily
def test_every_notebook_runs_clean_in_a_fresh_kernel(tmp_path):
    """What a reader does with the download: run it top to bottom, with nothing of this
    project around (another folder, no devices preset), and get no error."""
    import concurrent.futures

    import nbformat
    from nbclient import NotebookClient

    results = outputs.ensure(CODE_PAGES)
    from docs_build.devices import CACHE_SETTINGS

    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("JAX_NUM_CPU_DEVICES", "XLA_FLAGS", "PYTHONPATH")
    }
    # The compiled programs of the pages' own runs: the kernels compile nothing twice (only
    # compile time is saved; a reader's first run compiles, with the same results).
    env.update({name: default for name, (default, _) in CACHE_SETTINGS.items()})
    # An exercise's notebook fetches its grader from the site: here from the graders the
    # build publishes, served on 127.0.0.1 (tests/exercises/test_notebook.py serves the
    # built site itself).
    served = tmp_path / "site" / graders.FOLDER
    served.mkdir(parents=True)
    for name in EXERCISES:
        (served / f"{name}.py").write_text(graders.source(name, SITE), encoding="utf-8")
    handler = functools.partial(
        http.server.SimpleHTTPRequestHandler, directory=str(tmp_path / "site")
    )
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env[graders.SITE_VARIABLE] = f"http://127.0.0.1:{server.server_address[1]}/"

    def run(page):
        rel = page.relative_to(outputs.DOCS).as_posix()
        text = notebooks.build(page, SITE, REPO, results[rel].blocks)
        nb = nbformat.reads(text, as_version=4)
        folder = tmp_path / rel.replace("/", "_")
        folder.mkdir()
        client = NotebookClient(
            nb,
            timeout=600,
            kernel_name="python3",
            resources={"metadata": {"path": str(folder)}},
        )
        client.execute(env=env)  # the kernel's environment, without our presets
        return rel, nb

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        ran = dict(pool.map(run, CODE_PAGES))
    server.shutdown()
    assert len(ran) >= 33
    for rel, nb in ran.items():
        errors = [
            o
            for c in nb.cells
            if c.cell_type == "code"
            for o in c.outputs
            if o.output_type == "error"
        ]
        assert not errors, f"{rel}: {errors[0]['ename']}: {errors[0]['evalue']}"


def test_heading_attribute_lists_are_the_sites_not_the_notebooks():
    text = "## Where next { data-search-exclude }\n### `pmap` { #pmap }\nA {brace} stays.\n"
    assert notebooks.HEADING_ATTRS.sub(r"\1", text) == (
        "## Where next\n### `pmap`\nA {brace} stays.\n"
    )


def test_a_notebook_pins_the_optional_packages_its_page_imports():
    """On Colab the checkpoints notebook installs the Orbax and the Grain the page ran with;
    a page that imports neither installs neither."""
    import importlib.metadata

    pages = {
        "advanced/checkpoints.md": True,
        "concepts/collectives.md": False,
    }
    pins = [
        f"{n}=={importlib.metadata.version(n)}" for n in ("orbax-checkpoint", "grain")
    ]
    for rel, wanted in pages.items():
        page = outputs.DOCS / rel
        blocks = outputs.ensure([page])[rel].blocks
        text = notebooks.build(page, SITE, REPO, blocks)
        install = next(line for line in text.splitlines() if "%pip install" in line)
        for pin in pins:
            assert (pin in install.split()) == wanted, (rel, install)


def test_a_notebook_links_to_the_page_for_what_only_a_browser_runs():
    """The explorer's form and script stay on the site: its notebook says where they are and
    keeps the table of examples, filled in as on the page."""
    page = outputs.DOCS / "tools" / "sharding-explorer.md"
    text = notebooks.build(page, SITE, REPO, [[] for _ in outputs.page_blocks(page)])
    assert "<script" not in text and "<form" not in text and "site-only" not in text
    assert f"see [the page]({SITE}tools/sharding-explorer/)" in text
    assert "IndivisibleError" in text and "<!-- explorer:" not in text
