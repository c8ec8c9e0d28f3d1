"""A block that joins several sections shows each import once (docs_build.imports): on the
site, in the program the build runs, in the notebook and in pytest-markdown-docs' program."""

import json
import re
from pathlib import Path

import markdown
import pytest

import conftest
from docs_build import imports, notebooks, outputs

ROOT = Path(__file__).resolve().parents[2]
TRANSFORMER = ROOT / "docs" / "advanced" / "transformer.md"
# The transformer's imports block joins three modules' imports, which each import `jax`,
# `nnx`, `Mesh` and `NamedSharding`.
JOINED = [
    "snippets/advanced/transformer/model.py:imports",
    "snippets/advanced/transformer/init.py:imports",
    "snippets/advanced/transformer/step.py:imports",
]


def bound(code: str) -> list[tuple[str, str]]:
    """Every (module, name) the top-level import lines of `code` bind, repeats included."""
    found = []
    for line in code.split("\n"):
        if m := re.match(r"^from (\S+) import (.+)$", line):
            found += [(m[1], n.strip()) for n in m[2].split(",")]
        elif m := re.match(r"^import (.+)$", line):
            found += [("", n.strip()) for n in m[1].split(",")]
    return found


def test_repeats_go_and_new_names_stay():
    code = (
        "import math\n"
        "import jax\n"
        "from jax.sharding import AxisType, Mesh\n"
        "\n"
        "# the second section\n"
        "import jax\n"
        "import jax.numpy as jnp\n"
        "from jax.sharding import Mesh, NamedSharding\n"
        "from jax.sharding import AxisType\n"
        "import numpy\n"
        "import numpy as np\n"
        "\n"
        "def f():\n"
        "    import jax\n"
        "import math\n"
    )
    assert imports.dedupe(code) == (
        "import math\n"
        "import jax\n"
        "from jax.sharding import AxisType, Mesh\n"
        "\n"
        "# the second section\n"
        "import jax.numpy as jnp\n"
        "from jax.sharding import NamedSharding\n"
        "import numpy\n"
        "import numpy as np\n"  # another binding (np), so it stays
        "\n"
        "def f():\n"
        "    import jax\n"  # after the first line of code, nothing is touched
        "import math\n"
    )


def test_a_block_without_repeats_is_left_as_it_is():
    code = 'import jax\n\njax.config.update("jax_num_cpu_devices", 8)\nimport jax\n'
    assert imports.dedupe(code) == code


def test_the_joined_block_binds_each_name_once_in_the_program_the_build_runs():
    blocks = outputs.page_blocks(TRANSFORMER)
    (block,) = [b for b in blocks if list(b.includes) == JOINED]
    raw = outputs.expand(
        "\n".join(f'--8<-- "{t}"' for t in JOINED), "transformer imports"
    )
    assert len(bound(raw)) > len(set(bound(raw)))  # the sections repeat names...
    names = bound(block.source)
    assert len(names) == len(set(names))  # ...the block does not
    assert set(names) == set(bound(raw))  # and loses none


def site_fences(page: Path) -> list[str]:
    """The Python fences (not `notest`) of the page as the site's Markdown sees them after
    the preprocessors up to the dedupe: its includes expanded and its imports deduped."""
    md = markdown.Markdown(
        extensions=["pymdownx.snippets", "docs_build.imports"],
        extension_configs={"pymdownx.snippets": outputs.SNIPPETS_OPTIONS},
    )
    lines = page.read_text(encoding="utf-8").split("\n")
    for name in ("snippet", "dedupe_imports"):
        lines = md.preprocessors[name].run(lines)
    fences, at = [], 0
    while at < len(lines):
        opening = imports.FENCE.match(lines[at])
        at += 1
        if not opening:
            continue
        body = []
        while lines[at].strip() != opening["fence"]:
            body.append(lines[at][len(opening["indent"]) :])
            at += 1
        at += 1
        lang, options = outputs.fence_info(opening["info"])
        if lang in outputs.PYTHON_LANGS and "notest" not in options:
            fences.append("\n".join(body).strip("\n") + "\n")
    return fences


@pytest.mark.parametrize(
    "page",
    [TRANSFORMER, ROOT / "docs" / "training" / "choosing.md"],
    ids=lambda p: p.stem,
)
def test_the_site_shows_the_code_the_build_runs(page):
    assert site_fences(page) == [b.source for b in outputs.page_blocks(page)]


def test_mkdocs_runs_the_dedupe_after_the_includes():
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    extensions = re.findall(
        r"^  - ([\w.]+)", config.split("markdown_extensions:")[1], re.MULTILINE
    )
    assert extensions.index("docs_build.imports") > extensions.index(
        "pymdownx.snippets"
    )
    md = markdown.Markdown(extensions=["pymdownx.snippets", "docs_build.imports"])
    names = [p.name for p in md.preprocessors._priority]
    assert names.index("snippet") < names.index("dedupe_imports")


def test_the_notebook_and_the_tested_program_hold_the_deduped_block():
    blocks = outputs.page_blocks(TRANSFORMER)
    (block,) = [b for b in blocks if list(b.includes) == JOINED]
    nb = json.loads(notebooks.build(TRANSFORMER, "https://example.org/", "https://x/y"))
    code = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    assert block.source.rstrip("\n") in code
    tokens = conftest.pytest_markdown_docs_markdown_it().parse(
        TRANSFORMER.read_text(encoding="utf-8")
    )
    program = next(t.content for t in tokens if t.type == "fence")
    assert block.source in program
    joined = program.split(f"# ---- block {block.index + 1},")[1].split("# ----")[0]
    assert joined.count("\nimport jax\n") == 1


def test_a_from_line_with_one_new_name_keeps_only_it():
    code = "from jax import P\nfrom jax import P, NamedSharding\n\nx = 1\n"
    assert (
        imports.dedupe(code)
        == "from jax import P\nfrom jax import NamedSharding\n\nx = 1\n"
    )
