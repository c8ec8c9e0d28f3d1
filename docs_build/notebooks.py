"""Every guide page as a Jupyter notebook, generated from the same snippets with jupytext.

`write_all()` turns each page that has Python blocks into docs/notebooks/<page>.ipynb: the
prose as Markdown cells, each block (its includes expanded, as on the page) as a code cell,
after a first cell that names the versions it was tested with and, on Colab only, installs
them. An exercise's notebook also gets two cells of its own where its page says how to check
an answer: one fetches the exercise's grader from the site, one grades (`docs_build.graders`).
Each code cell carries the outputs of the build's one run of the page (see
`docs_build.outputs`); mkdocs-jupyter renders the notebooks without executing them again.

A notebook is rewritten only when its content changes, and its metadata carries the page's
output cache key (the code, every `snippets` module it imports or launches, the versions):
so a changed snippet changes exactly the notebooks that use it.
"""

from __future__ import annotations

import json
import posixpath
import re
from pathlib import Path

from docs_build import explorer, folds, graders, outputs
from docs_build.compiled import pages as tpu_pages
from docs_build.versions import pages as version_pages

NOTEBOOKS = outputs.DOCS / "notebooks"
SHOWN_VERSIONS = ("jax", "flax", "optax")
# Packages only some pages import (module: distribution): a notebook pins them in its Colab
# install line when its code imports them, since Colab's own versions may differ.
OPTIONAL_PACKAGES = {"orbax": "orbax-checkpoint", "grain": "grain"}
ANNOTATION_MARK = re.compile(r"\s*# \(\d+\)!$", re.MULTILINE)
MD_LINK = re.compile(r"\]\((?!https?:|#|mailto:)([^)\s]+?\.md)(#[^)\s]*)?\)")


def notebook_path(page: str) -> str:
    """Where the notebook of `page` (relative to docs/) lives, relative to docs/."""
    return "notebooks/" + page.removesuffix(".md") + ".ipynb"


def url_dir(src: str) -> str:
    """The directory a page (or notebook) is served from, relative to the site root."""
    stem, _ = posixpath.splitext(src)
    if posixpath.basename(stem) == "index":
        folder = posixpath.dirname(stem)
        return folder + "/" if folder else ""
    return stem + "/"


def colab_url(repo_url: str, page: str) -> str:
    """Colab opens notebooks from GitHub; CI publishes them to the `notebooks` branch."""
    repo = repo_url.rstrip("/").removeprefix("https://github.com/")
    return f"https://colab.research.google.com/github/{repo}/blob/notebooks/{page[:-3]}.ipynb"


def links_markdown(page: str, repo_url: str, *, from_notebook: bool) -> str:
    """The line each guide page and each notebook page shows: view, download, Colab."""
    name = Path(page).stem + ".ipynb"
    colab = colab_url(repo_url, page)
    if from_notebook:
        download = name  # mkdocs-jupyter copies the file next to the notebook's page
        return (
            f'<a href="{download}" download>Download this notebook</a> · '
            f'<a href="{colab}">Open in Colab</a>'
        )
    here = posixpath.dirname(page)
    nb_page = posixpath.relpath(notebook_path(page), here or ".")
    # mkdocs-jupyter copies the file next to the notebook's page; links go from the page's
    # own directory (x/y.md is served as x/y/, x/index.md as x/).
    download = posixpath.relpath(
        url_dir(notebook_path(page)) + name, url_dir(page) or "."
    )
    return (
        f"Run this page as a notebook: [view it with outputs]({nb_page}) · "
        f'<a href="{download}" download>download the .ipynb</a> · '
        f'<a href="{colab}">open in Colab</a>'
    )


HEADING_ATTRS = re.compile(r"^(#{1,6} .*?)\s*\{[^{}]*\}[ \t]*$", re.MULTILINE)
# What only a web page can hold (a form and its script): a notebook links to the page instead.
SITE_ONLY = re.compile(r"<!-- site-only -->.*?<!-- /site-only -->", re.DOTALL)


def _prose(text: str, page: str, site_url: str) -> str:
    """Page Markdown that Jupyter renders: Material's admonitions become quotes and its tabs
    plain sections, includes are expanded, and links to other pages made absolute, so they
    work from the notebook and on Colab."""
    out: list[str] = []
    box = None  # inside an admonition ("quote") or a content tab ("tab")
    text = version_pages.fill(outputs.expand(text, page), page)
    text = tpu_pages.fill(
        text
    )  # the compiled figures the page's prose and tables quote
    text = explorer.fill(text)
    here = posixpath.basename(page)
    text = SITE_ONLY.sub(
        f"*This part runs in a browser: see [the page]({here}).*", text
    )
    # A heading's attribute list (`{ #id }`, `{ data-search-exclude }`) is for the site:
    # Jupyter would print it.
    text = HEADING_ATTRS.sub(r"\1", text)
    for line in text.split("\n"):
        if m := re.match(r'^\?\?\?\s+measured\s+"(.*)"\s*$', line):
            # "How this was measured" stays a closed fold in the notebook too.
            out.append(f'<details class="measured"><summary>{m.group(1)}</summary>\n')
            box = "fold"
        elif m := re.match(r"^(!!!|\?\?\?\+?)\s+\w+(?:\s+\"(.*)\")?\s*$", line):
            out.append(f"> **{m.group(2) or 'Note'}**")
            box = "quote"
        elif m := re.match(r'^===\s+"(.*)"\s*$', line):
            out.append(f"**{m.group(1)}**")
            box = "tab"
        elif box and (line.startswith("    ") or not line.strip()):
            body = line[4:]
            out.append(("> " + body).rstrip() if box == "quote" else body)
        else:
            # The blank line that ended a box is the quote's end, not a line of it.
            if box == "quote" and out and out[-1] == ">":
                out[-1] = ""
            if box == "fold":
                out += ["</details>", ""]
            box = None
            out.append(line)
    if box == "fold":
        out.append("</details>")
    prose = re.sub(
        r"\n{3,}", "\n\n", "\n".join(out)
    )  # jupytext splits cells at 2 blanks
    prose = re.sub(r"```\{\.(\w+)[^}]*\}", r"```\1", prose)  # brace fences, for Jupyter

    def absolute(m: re.Match) -> str:
        target = posixpath.normpath(posixpath.join(posixpath.dirname(page), m.group(1)))
        url = (
            site_url.rstrip("/")
            + "/"
            + target.removesuffix(".md").removesuffix("index")
        )
        return f"]({url.rstrip('/')}/{m.group(2) or ''})"

    return MD_LINK.sub(absolute, prose)


def _region(prose: str) -> str:
    """One Markdown cell, whatever it holds: jupytext would make a shell fence a %%bash cell."""
    prose = prose.strip("\n")
    return f"<!-- #region -->\n{prose}\n<!-- #endregion -->\n" if prose else ""


def cell_outputs(chunks: list[dict]) -> list[dict]:
    """What one block printed and drew, as the outputs of its notebook cell."""
    import nbformat

    out = []
    for chunk in chunks:
        if "svg" in chunk:
            data = {"image/svg+xml": chunk["svg"], "text/plain": chunk["alt"]}
            out.append(nbformat.v4.new_output("display_data", data=data))
        elif "html" in chunk:
            data = {"text/html": chunk["html"], "text/plain": chunk["alt"]}
            out.append(nbformat.v4.new_output("display_data", data=data))
        else:
            out.append(
                nbformat.v4.new_output("stream", name="stdout", text=chunk["text"])
            )
    return out


def needs_the_repository(blocks: list[outputs.Block]) -> bool:
    """Code that imports this project's `snippets` runs only in a clone: no notebook.

    Naming a module to start later (the multi-host launcher) is not importing it."""
    code = "\n".join(b.source for b in blocks)
    return bool(outputs.imported_snippets(code, launched=False))


def build(
    page: Path, site_url: str, repo_url: str, ran: list[list[dict]] | None = None
) -> str | None:
    """The notebook of one page, as ipynb JSON text; None for a page without code.

    `ran` is what each block printed and drew in the build's one run of the page: it becomes
    the cells' outputs, so the notebook is never executed a second time.
    """
    import jupytext
    from markdown_it import MarkdownIt

    blocks = outputs.page_blocks(page)
    if not blocks or needs_the_repository(blocks):
        return None
    rel = blocks[0].page
    # Setup folds open: their blocks are code cells, their titles bold prose.
    text = folds.unfold(page.read_text(encoding="utf-8"))
    lines = text.split("\n")
    fences = outputs.python_fences(MarkdownIt("commonmark").parse(text))
    versions = {k: v for k, v in outputs.versions().items() if k in SHOWN_VERSIONS}
    pins = " ".join(f"{k}=={v}" for k, v in versions.items())
    installed = outputs.versions()
    for module, distribution in OPTIONAL_PACKAGES.items():
        if any(
            re.search(rf"^\s*(import|from) {module}\b", b.source, re.M) for b in blocks
        ):
            pins += f" {distribution}=={installed[distribution]}"
    setup = (
        f"# Tested with {', '.join(f'{k} {v}' for k, v in versions.items())}"
        " on 8 virtual CPU devices.\n"
        "import importlib.util\n\n"
        'if importlib.util.find_spec("google.colab"):  # on Colab: the same versions first\n'
        f"    %pip install --quiet {pins} rich matplotlib\n"
    )
    parts = [
        f"{lines[0]}\n\n"
        f"This notebook is [a page]({site_url.rstrip('/')}/{url_dir(rel)}) of "
        f"*Sharding in JAX, run and tested*, generated from the same tested code. "
        f"{links_markdown(rel, repo_url, from_notebook=True)}\n",
    ]
    start = 1
    name = graders.exercise_of(rel)
    grading = graders.notebook_cells(name, site_url) if name else ()

    def prose(chunk: str) -> list[str]:
        """A stretch of prose; at an exercise page's "check" marker, the grader's cells."""
        if not grading or graders.MARKER not in chunk:
            return [_region(_prose(chunk, rel, site_url))]
        before, after = chunk.split(graders.MARKER, 1)
        note = graders.notebook_note(name)
        return [
            _region(f"{_prose(before, rel, site_url).rstrip()}\n\n{note}"),
            *(f"```python\n{code}\n```\n" for code in grading),
            _region(_prose(after, rel, site_url)),
        ]

    for token, block in zip(fences, blocks, strict=True):
        parts += prose("\n".join(lines[start : token.map[0]]))
        code = ANNOTATION_MARK.sub("", block.source).rstrip("\n")
        if (
            block.index == 0
        ):  # the first cell: versions, Colab's install, then the devices
            code = f"{setup}\n{code}"
        parts.append(f"```python\n{code}\n```\n")
        start = token.map[1]
    parts += prose("\n".join(lines[start:]))
    notebook = jupytext.reads("\n".join(parts), fmt="md")
    for number, cell in enumerate(notebook.cells):
        cell.id = (
            f"cell-{number}"  # nbformat would draw random ids: a new file every build
        )
    # The grader's cells are the notebook's own: the build never runs them (they fetch).
    code_cells = [
        cell
        for cell in notebook.cells
        if cell.cell_type == "code" and cell.source not in grading
    ]
    if ran is not None:
        if len(ran) != len(code_cells):
            raise outputs.SnippetError(
                f"{rel}: {len(code_cells)} code cells but {len(ran)} blocks ran; build again."
            )
        for count, (cell, chunks) in enumerate(zip(code_cells, ran, strict=True), 1):
            cell.outputs = cell_outputs(chunks)
            cell.execution_count = count
    notebook.metadata = {
        "kernelspec": {
            "name": "python3",
            "display_name": "Python 3",
            "language": "python",
        },
        "language_info": {"name": "python"},
        # The page's output cache key: a change to the code or what it imports changes it.
        "sharding_docs": {"page": rel, "key": outputs.cache_key(blocks), **versions},
    }
    return jupytext.writes(notebook, fmt="ipynb")


def write(
    page: Path, site_url: str, repo_url: str, ran: list[list[dict]] | None = None
) -> tuple[Path | None, bool]:
    """Write (or leave alone, when unchanged) the notebook of one page.

    Returns where it belongs (None for a page without one) and whether it was written.
    """
    content = build(page, site_url, repo_url, ran)
    if content is None:
        return None, False
    target = outputs.DOCS / notebook_path(page.relative_to(outputs.DOCS).as_posix())
    if target.exists() and target.read_text(encoding="utf-8") == content:
        return target, False
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(content, encoding="utf-8")
    return target, True


def write_all(
    site_url: str,
    repo_url: str,
    results: dict | None = None,
    done: dict[Path, tuple[Path | None, bool]] | None = None,
) -> list[Path]:
    """Write (or leave alone, when unchanged) the notebook of every page; remove stale ones.

    `results` (from `outputs.ensure`) gives each notebook the outputs of the page's run;
    `done` holds what `write` already returned for some pages (written while others ran).
    """
    written, wanted = [], set()
    done = done or {}
    for page in outputs.doc_pages():
        if page.is_relative_to(NOTEBOOKS):
            continue
        if page in done:
            target, changed = done[page]
        else:
            rel = page.relative_to(outputs.DOCS).as_posix()
            ran = results[rel].blocks if results and rel in results else None
            target, changed = write(page, site_url, repo_url, ran)
        if target is not None:
            wanted.add(target)
            if changed:
                written.append(target)
    for stale in set(NOTEBOOKS.rglob("*.ipynb")) - wanted if NOTEBOOKS.exists() else ():
        stale.unlink()
    return written


def notebook_key(path: Path) -> str:
    return json.loads(path.read_text(encoding="utf-8"))["metadata"]["sharding_docs"][
        "key"
    ]


def main() -> int:
    """Write every page's notebook (for CI to publish to the `notebooks` branch)."""
    from mkdocs.config import load_config

    config = load_config(str(outputs.ROOT / "mkdocs.yml"))
    results = outputs.ensure(outputs.doc_pages())
    written = write_all(config.site_url or "", config.repo_url or "", results)
    total = len(list(NOTEBOOKS.rglob("*.ipynb")))
    print(
        f"notebooks: {total} in {NOTEBOOKS.relative_to(outputs.ROOT)}, {len(written)} written"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
