"""MkDocs hooks: run each page's code (through the cache) and show its output under each block.

Registered in mkdocs.yml under `hooks:`. Before any page is rendered, `on_pre_build` brings
every page's outputs up to date (see `docs_build.outputs`) and writes the notebooks with them; a
failing snippet stops the build with its name and traceback. `on_page_markdown` then places, after each Python fence, what that fence
printed (a text block) and drew (inline SVG diagrams), and fills the generated blocks: the
error index (`docs_build.errorindex`), the version matrix's and the TPU results' markers.
"""

from __future__ import annotations

import hashlib
import math
import os
import posixpath
import re
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError

from docs_build import (
    errorindex,
    explorer,
    graders,
    home,
    notebook_toc,
    notebooks,
    outputs,
    planner_page,
    prose,
    render,
)
from docs_build.compiled import pages as tpu_pages
from docs_build.devices import CACHE_SETTINGS
from docs_build.versions import pages as version_pages

_results: dict[str, outputs.PageResult] = {}
_first_shown: dict[
    str, str
] = {}  # `file:section` -> the first page (nav order) showing it
_reading_order: list[str] = []  # the pages of the navigation, in order
# the navigation's sections, in order: each title with its pages (for the home page's path)
_sections: list[tuple[str, list[str]]] = []


def on_config(config):
    # Notebook kernels inherit this process's environment: they share the compilation cache.
    for name, (default, _) in CACHE_SETTINGS.items():
        os.environ.setdefault(name, default)
    use_notebook_templates(config)
    # The footer names the versions the outputs were generated with (partials/copyright.html).
    shown = ("jax", "flax", "optax")
    config.extra["versions"] = {
        k: v for k, v in outputs.versions().items() if k in shown
    }
    return config


def on_pre_build(config):
    """Run every page's code once (or take it from the cache), then write the notebooks with
    those outputs: before mkdocs collects the files, so that mkdocs-jupyter finds them."""
    site_url, repo_url = config.site_url or "", config.repo_url or ""
    done = {}

    def write_notebook(page, result):  # while the other pages still run
        done[page] = notebooks.write(page, site_url, repo_url, result.blocks)

    try:
        results = outputs.ensure(outputs.doc_pages(), on_run=write_notebook)
        written = notebooks.write_all(site_url, repo_url, results, done)
    except outputs.SnippetError as err:
        raise PluginError(
            f"A page's code could not be run, so the site was not built.\n\n{err}"
        ) from None
    _results.clear()
    _results.update(results)
    ran = sorted(r.page for r in results.values() if r.ran)
    print(
        f"INFO    -  snippet outputs: {len(results)} pages with code, "
        f"{len(ran)} ran{': ' + ', '.join(ran) if ran else ''}",
        file=sys.stderr,
    )
    if written:
        print(f"INFO    -  notebooks written: {len(written)}", file=sys.stderr)


def on_files(files, config):
    """Each exercise's one-file grader, published at exercises/graders/<name>.py."""
    graders.publish(config, files)
    return files


def on_nav(nav, config, files):
    """Note, for each included section, the first page in reading order that shows it."""
    _first_shown.clear()
    _reading_order[:] = [page.file.src_uri for page in nav.pages]
    _sections[:] = [
        (item.title, [p.file.src_uri for p in item.children if p.is_page])
        for item in nav.items
        if item.is_section
    ]
    for page in nav.pages:
        text = Path(page.file.abs_src_path).read_text(encoding="utf-8")
        for _, targets in python_fences_with_includes(text.split("\n")):
            for target in targets:
                _first_shown.setdefault(target, page.file.src_uri)
    return nav


_FENCE = re.compile(r"^(\s*)(`{3,})\{\.python\b")


def python_fences_with_includes(lines: list[str]) -> list[tuple[int, list[str]]]:
    """Each Python fence that includes snippets (run or not): its line index and targets."""
    found, i = [], 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, targets = i, []
        i += 1
        while i < len(lines) and lines[i].strip() != m.group(2):
            targets += outputs.INCLUDE.findall(lines[i])
            i += 1
        if targets:
            found.append((start, targets))
        i += 1
    return found


BOILERPLATE = 'data-search-exclude="banner"'


def on_page_markdown(markdown, page, config, files):
    if is_notebook(page):
        # The guide page holds the same text: search should find it once, there.
        page.meta["search"] = {"exclude": True}
        return markdown
    result = _results.get(page.file.src_uri)
    blocks = outputs.page_blocks(Path(page.file.abs_src_path)) if result else []
    if result is not None and len(blocks) != len(result.blocks):
        raise PluginError(
            f"{page.file.src_uri}: its outputs are out of date; build again."
        )
    lines = markdown.split("\n")
    for at, targets in python_fences_with_includes(lines):
        if all(
            target.endswith(":imports")
            or _first_shown.get(target, page.file.src_uri) != page.file.src_uri
            for target in targets
        ):
            # Code an earlier page already shows (the device setup, the shared model, a
            # solution), with at most this page's imports: searched for, it should be found
            # once, where it is explained.
            lines[at] = lines[at].replace(
                "{.python", '{.python data-search-exclude="shown-before"', 1
            )
    ran = result.blocks if result else []
    for block, chunks in reversed(list(zip(blocks, ran, strict=True))):
        shown = [chunk_markdown(chunk) for chunk in chunks]
        if shown:
            lines = place_output(lines, block, "\n\n".join(shown))
    # Last, because they change line numbers: the error index (docs/guides/error-index.md),
    # version numbers and tables from the version matrix, and a note under the title when
    # the code needs a newer release.
    try:
        markdown = errorindex.fill(
            "\n".join(lines),
            page.file.src_uri,
            _results,
            _reading_order,
            config.mdx_configs.get("toc"),
        )
        markdown = version_pages.fill(markdown, page.file.src_uri)
        markdown = tpu_pages.fill(markdown)
        markdown = explorer.fill(markdown)
        markdown = planner_page.fill(markdown)
        markdown = home.fill(markdown, _sections, page.file.src_uri)
        markdown = graders.fill(markdown, page.file.src_uri, config.repo_url or "")
        code = "\n".join(block.source for block in blocks)
        link = posixpath.relpath(COMPATIBILITY, posixpath.dirname(page.file.src_uri))
        note = version_pages.needs_note(code, link)
    except (
        errorindex.ErrorIndexError,
        version_pages.VersionsError,
        tpu_pages.CompiledResultsError,
        home.HomeError,
        graders.GraderError,
    ) as err:
        raise PluginError(str(err)) from None
    if note:
        # the same few words on every page whose code needs a newer release, as the links
        # below on every page with code: search would list every page for them (together,
        # about 19 KB of the index's 1.1 MB of raw text before they left it)
        note = f"<div {BOILERPLATE} markdown>\n\n{note}\n</div>\n"
    if blocks and not notebooks.needs_the_repository(blocks):
        # Every page with code is also a notebook: say where, under the title.
        links = notebooks.links_markdown(
            page.file.src_uri, config.repo_url or "", from_notebook=False
        )
        note = f'<p class="notebook-links" {BOILERPLATE} markdown>{links}</p>\n\n{note}'
    if note and NOTES in markdown:
        markdown = markdown.replace(NOTES, note)
    elif note:
        title, _, rest = markdown.partition("\n")
        markdown = f"{title}\n\n{note}\n{rest}"
    return markdown


COMPATIBILITY = "guides/compatibility.md"
# Where a page wants its notebook links and its "Needs JAX ..." note, if not under its title:
# the home page keeps its first screen for its example and its path.
NOTES = "<!-- page notes -->"


def place_output(lines: list[str], block: outputs.Block, shown: str) -> list[str]:
    """The page's lines with a block's output after it, indented as the block is: in a
    setup fold (`docs_build.folds`) the output stays inside the fold."""
    fence = lines[block.line - 1]
    indent = fence[: len(fence) - len(fence.lstrip())]
    at = after_annotations(lines, block.end_line, indent)
    shown_lines = [indent + line if line else line for line in shown.split("\n")]
    return [*lines[:at], "", *shown_lines, "", *lines[at:]]


def after_annotations(lines: list[str], at: int, indent: str = "") -> int:
    """Where output goes: after the block, or after the code annotations list that follows it.

    Material attaches a numbered list to the code block right before it, so the output must
    not come between them. `indent` is the block's own (inside a setup fold).
    """
    item = re.compile(rf"{re.escape(indent)}\d+\.\s")
    i = at
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i == len(lines) or not item.match(lines[i]):
        return at
    end = i + 1
    for j in range(i + 1, len(lines)):
        if item.match(lines[j]) or lines[j].startswith(
            (indent + "    ", indent + "\t")
        ):
            end = j + 1
        elif lines[j].strip():
            break
    return end


def chunk_markdown(chunk: dict) -> str:
    """Markdown for one piece of a block's output: printed text, or a diagram.

    Both are left out of the search index (`data-search-exclude`): they are the code's
    output, megabytes of tables and drawings, while the prose around them names what they
    show.
    """
    if "svg" in chunk:
        return f'<div class="sharding-diagram" data-search-exclude>\n{chunk["svg"]}\n</div>'
    if "html" in chunk and render.is_data_table(chunk["html"]):
        # a table of data (render.rich_table): the theme styles it as any table of the
        # page's, and wraps it in its scrolling box
        return f'<div class="data-table" data-search-exclude>\n{chunk["html"]}\n</div>'
    if "html" in chunk:
        return f'<div class="per-device-table" data-search-exclude>\n{chunk["html"]}\n</div>'
    text = chunk["text"].rstrip("\n")
    fence = "`" * max(3, 1 + max(map(len, re.findall("`+", text)), default=0))
    attrs = '.text .output .no-copy title="Output" data-search-exclude="output"'
    return f"{fence}{{{attrs}}}\n{text}\n{fence}"


# The notebook pages' markup: nbconvert templates of our own (see the template's header), in
# place of mkdocs-jupyter's, which carry JupyterLab's stylesheet and a copy button with its own
# icon and a second copy of the code in every cell. mkdocs-jupyter looks its templates up in
# `mkdocs_jupyter.config.settings.templates_dir` each time it converts a notebook;
# tests/test_notebooks.py fails if it stops doing so. Its table of contents is made by
# `docs_build.notebook_toc` (mkdocs-jupyter's own drops inline code from headings), which it
# looks up as `mkdocs_jupyter.plugin._get_nb_toc_tokens` each time it renders a notebook. Its
# cache of rendered notebooks knows neither, so their hash names the cache's folder.
NOTEBOOK_TEMPLATES = Path(__file__).resolve().parent / "notebook_templates"


def use_notebook_templates(config) -> None:
    from mkdocs_jupyter import plugin as jupyter_plugin
    from mkdocs_jupyter.config import settings

    settings.templates_dir = str(NOTEBOOK_TEMPLATES)
    jupyter_plugin._get_nb_toc_tokens = notebook_toc.toc_tokens
    plugin = config.plugins.get("mkdocs-jupyter")
    if plugin is not None and plugin.config.get("cache"):
        digest = hashlib.sha256()
        for path in sorted(NOTEBOOK_TEMPLATES.rglob("*")):
            if path.is_file():
                digest.update(path.relative_to(NOTEBOOK_TEMPLATES).as_posix().encode())
                digest.update(path.read_bytes())
        digest.update(Path(notebook_toc.__file__).read_bytes())
        base = Path(plugin.config["cache_dir"])
        if base.name != (name := "templates-" + digest.hexdigest()[:12]):
            plugin.config["cache_dir"] = str(
                (base.parent if base.name.startswith("templates-") else base) / name
            )


def is_notebook(page) -> bool:
    return page.file.src_uri.startswith("notebooks/")


# A code block as Material writes it, and an annotation marker comment inside one.
_CODE_BLOCK = re.compile(r'<div class="language-\w+ highlight">.*?</pre></div>', re.S)
_MARKER = re.compile(r'[ \t]*<span class="c1">#[ \t]*\(\d+\)!</span>')


def drop_unlisted_markers(html: str) -> str:
    """A section included without the annotation list that explains its `# (1)!` markers
    (a setup fold that reuses another page's code) would show the markers as comments,
    and the copy button would copy them: they go. A block followed by its list keeps them
    for Material to turn into annotations."""

    def one(match: re.Match) -> str:
        if html[match.end() :].lstrip().startswith("<ol>"):
            return match[0]
        return _MARKER.sub("", match[0])

    return _CODE_BLOCK.sub(one, html)


def on_page_content(html, page, config, files):
    # Exception messages in output blocks wrap on a narrow screen; other output keeps its
    # lines (docs_build.prose).
    html = prose.mark_prose_output(html)
    # A notebook page's headings get the ids its table of contents links to
    # (docs_build.notebook_toc).
    if is_notebook(page):
        return notebook_toc.unique_heading_ids(html)
    return html


# The navigation of every page, as the theme writes it: its template leaves a blank line for
# each tag it skips, about 4 KB a page and more with each section. No <pre> is inside it.
_NAVIGATION = re.compile(
    r'(<div class="md-sidebar md-sidebar--primary".*?)'
    r'(?=<div class="md-sidebar md-sidebar--secondary")',
    re.S,
)


# Pygments wraps every name in code in a span of class "n", which Material colours with
# --md-code-hl-name-color, set to the code's own colour (--md-code-fg-color): the span draws
# nothing, and on a page of code it is a sixth of the HTML (35 KB of the sequence page's
# 200 KB). Every page drops it, notebook pages too (marked up as the guide pages are).
_PLAIN_NAME = re.compile(r'<span class="n">([^<]*)</span>')


# Text in a figure stays at 11 px or more on any screen: a drawing whose box would shrink its
# smallest text below that gets a minimum width, and its box scrolls sideways instead (with
# the cue of extra.css, named and focusable by a11y.js).
SMALLEST_TEXT = 11
_FIGURE = re.compile(r"<svg\b[^>]*\brole=\"img\"[^>]*>.*?</svg>", re.S)
# (case-blind: a notebook page's markup writes the attribute `viewbox`)
_VIEW_WIDTH = re.compile(r'\bviewBox="[\d.-]+ [\d.-]+ ([\d.]+) [\d.]+"', re.I)
_FONT_SIZES = re.compile(
    r'font-size(?:="|:\s*)([\d.]+)|\bfont:\s*(?:[a-z-]+\s+)*([\d.]+)px'
)


def readable_figures(html: str) -> str:
    """Each drawing with a minimum width at which its smallest text is SMALLEST_TEXT px."""

    def widen(match: re.Match) -> str:
        svg = match[0]
        root = svg[: svg.index(">") + 1]
        width = _VIEW_WIDTH.search(root)
        sizes = [float(a or b) for a, b in _FONT_SIZES.findall(svg)]
        if not width or not sizes or "min-width" in root:
            return svg
        least = math.ceil(float(width[1]) * SMALLEST_TEXT / min(sizes))
        if 'style="' in root:
            widened = root.replace('style="', f'style="min-width:{least}px;', 1)
        else:
            widened = root[:-1] + f' style="min-width:{least}px">'
        return widened + svg[len(root) :]

    return _FIGURE.sub(widen, html)


def on_post_page(output, page, config):
    # On the written page: applied in on_page_content, a setup fold's code was written
    # with its markers all the same (seen on the mixed-precision page).
    output = drop_unlisted_markers(output)
    output = _PLAIN_NAME.sub(r"\1", output)
    output = readable_figures(output)
    return _NAVIGATION.sub(
        lambda m: re.sub(r"\n[ \t]*(?=\n)", "", m[1]), output, count=1
    )


def on_page_context(context, page, config, nav):
    if is_notebook(page):
        page.edit_url = None  # generated from a page: there is no file to edit
    return context
