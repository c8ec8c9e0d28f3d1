"""An exercise's notebook, run as a reader runs it: the grader fetched from the built site.

The site is the strict build of this tree (docs_build/built_site.py), served on 127.0.0.1;
the notebook's fetch cell is pointed at it by the variable it reads, so nothing comes from
any other host.
"""

import functools
import http.server
import os
import re
import threading
from pathlib import Path

import pytest

import docs_build.built_site
from docs_build import graders, notebooks, outputs
from snippets.exercises.registry import EXERCISES

ROOT = Path(__file__).resolve().parents[2]
NAME = "column_sums"  # a short one: two hidden cases, no model to build


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def served_site():
    """The built site on a free port of 127.0.0.1, and the paths it was asked for."""
    site = docs_build.built_site.built_site()
    asked: list[str] = []

    class Handler(QuietHandler):
        def do_GET(self):
            asked.append(self.path)
            super().do_GET()

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Handler, directory=str(site))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield site, f"http://127.0.0.1:{server.server_address[1]}/", asked
    server.shutdown()


def answer(name: str) -> str:
    """What a reader writes in the starter's cell: the solution's imports and function."""
    text = (ROOT / EXERCISES[name].solution.split(":")[0]).read_text(encoding="utf-8")
    sections = [
        re.search(rf"\[start:{s}\]\n(.*?)# --8<-- \[end:{s}\]", text, re.S)[1]
        for s in ("imports", "solution")
    ]
    return re.sub(r"\s*# \(\d+\)!", "", "\n".join(sections)).strip()


def stdout(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


@pytest.mark.slow
def test_an_exercise_notebook_fetches_its_grader_and_grades_the_readers_function(
    served_site, tmp_path
):
    import nbformat
    from nbclient import NotebookClient

    site, url, asked = served_site
    published = site / graders.FOLDER / f"{NAME}.py"
    assert published.read_text(encoding="utf-8") == graders.source(
        NAME,
        "https://jax-sharding-docs.github.io/jax-sharding-docs/",
        graders.versions(),
    )
    page = outputs.DOCS / "exercises" / f"{NAME}.md"
    rel = f"exercises/{NAME}.md"
    text = notebooks.build(
        page,
        "https://jax-sharding-docs.github.io/jax-sharding-docs/",
        "https://github.com/jax-sharding-docs/jax-sharding-docs",
        outputs.ensure([page])[rel].blocks,
    )
    nb = nbformat.reads(text, as_version=4)
    code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    fetch = graders.notebook_cells(NAME, "https://x/")[0].splitlines()[0]
    at = next(i for i in code if nb.cells[i].source.startswith(fetch))
    starter = code[code.index(at) - 1]
    assert f"def {NAME}(" in nb.cells[starter].source
    assert nb.cells[at + 1].source == f"{NAME}_grader.check({NAME})"
    assert (
        nb.cells[at].outputs == nb.cells[at + 1].outputs == []
    )  # never run by the build

    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("JAX_NUM_CPU_DEVICES", "XLA_FLAGS", "PYTHONPATH")
    }
    env[graders.SITE_VARIABLE] = url
    client = NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    with client.setup_kernel(env=env):
        for index in code:  # top to bottom, the starter as it comes
            client.execute_cell(nb.cells[index], index)
        untouched = stdout(nb.cells[at + 1])
        nb.cells[starter].source = answer(NAME)  # the reader writes the function
        for index in (starter, at + 1):
            client.execute_cell(nb.cells[index], index)
        answered = stdout(nb.cells[at + 1])

    assert asked == [f"/{graders.FOLDER}/{NAME}.py"]  # from the served site, once
    flat = " ".join(untouched.split())
    assert f"NotImplementedError: {NAME}: write it" in flat
    assert untouched.split("\n\n")[-1].startswith("NOT YET: ")
    assert answered.startswith(f"Checking {NAME} from this notebook on 2 hidden cases")
    assert (
        answered.splitlines()[-1] == f"PASSED: {NAME} is right on all 2 hidden cases."
    )
