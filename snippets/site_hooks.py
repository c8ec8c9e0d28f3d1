"""MkDocs hooks: run each page's code (through the cache) and show its output under each block.

Registered in mkdocs.yml under `hooks:`. Before any page is rendered, `on_files` brings every
page's outputs up to date (see `snippets.outputs`); a failing snippet stops the build with its
name and traceback. `on_page_markdown` then places, after each Python fence, what that fence
printed (a text block) and drew (inline SVG diagrams).
"""

from __future__ import annotations

import os
import posixpath
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from mkdocs.exceptions import PluginError  # noqa: E402

from snippets import notebooks, outputs  # noqa: E402
from snippets.devices import CACHE_SETTINGS  # noqa: E402

_results: dict[str, outputs.PageResult] = {}


def on_config(config):
    # Notebook kernels inherit this process's environment: they share the compilation cache.
    for name, (default, _) in CACHE_SETTINGS.items():
        os.environ.setdefault(name, default)
    # The footer names the versions the outputs were generated with (partials/copyright.html).
    shown = ("jax", "flax", "optax")
    config.extra["versions"] = {
        k: v for k, v in outputs.versions().items() if k in shown
    }
    return config


def on_pre_build(config):
    # Before mkdocs collects the files, so that mkdocs-jupyter finds the notebooks.
    written = notebooks.write_all(config.site_url or "", config.repo_url or "")
    if written:
        print(f"INFO    -  notebooks written: {len(written)}", file=sys.stderr)


def on_files(files, config):
    pages = [
        Path(f.abs_src_path) for f in files.documentation_pages() if f.abs_src_path
    ]
    try:
        results = outputs.ensure(pages)
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
    return files


def on_page_markdown(markdown, page, config, files):
    result = _results.get(page.file.src_uri)
    if result is None:
        return markdown
    blocks = outputs.page_blocks(Path(page.file.abs_src_path))
    if len(blocks) != len(result.blocks):
        raise PluginError(
            f"{page.file.src_uri}: its outputs are out of date; build again."
        )
    lines = markdown.split("\n")
    for block, chunks in reversed(list(zip(blocks, result.blocks, strict=True))):
        shown = [chunk_markdown(chunk) for chunk in chunks]
        if shown:
            at = after_annotations(lines, block.end_line)
            lines[at:at] = ["", *"\n\n".join(shown).split("\n"), ""]
    return "\n".join(lines)


def after_annotations(lines: list[str], at: int) -> int:
    """Where output goes: after the block, or after the code annotations list that follows it.

    Material attaches a numbered list to the code block right before it, so the output must
    not come between them.
    """
    i = at
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i == len(lines) or not re.match(r"\d+\.\s", lines[i]):
        return at
    end = i + 1
    for j in range(i + 1, len(lines)):
        if re.match(r"\d+\.\s", lines[j]) or lines[j].startswith(("    ", "\t")):
            end = j + 1
        elif lines[j].strip():
            break
    return end


def chunk_markdown(chunk: dict) -> str:
    """Markdown for one piece of a block's output: printed text, or a diagram."""
    if "svg" in chunk:
        return f'<div class="sharding-diagram">\n{chunk["svg"]}\n</div>'
    text = chunk["text"].rstrip("\n")
    fence = "`" * max(3, 1 + max(map(len, re.findall("`+", text)), default=0))
    return f'{fence}{{.text .output .no-copy title="Output"}}\n{text}\n{fence}'


# Notebook pages: mkdocs-jupyter inlines about 590 KB of JupyterLab CSS into every one. The
# same CSS is written once as a stylesheet that the browser caches, and each page links it.
NOTEBOOK_CSS = "assets/stylesheets/notebook.css"
_STYLE = re.compile(r"<style[^>]*>.*?</style>\s*", re.DOTALL)


def is_notebook(page) -> bool:
    return page.file.src_uri.startswith("notebooks/")


def on_page_context(context, page, config, nav):
    if is_notebook(page):
        page.edit_url = None  # generated from a page: there is no file to edit
    return context


def on_post_page(output, page, config):
    if not is_notebook(page):
        return output
    styles = _STYLE.findall(output)
    css = "\n".join(
        re.sub(r"^<style[^>]*>|</style>\s*$", "", s.strip()) for s in styles
    )
    target = Path(config.site_dir, NOTEBOOK_CSS)
    if not target.exists() or target.read_text(encoding="utf-8") != css:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(css, encoding="utf-8")
    href = posixpath.relpath(NOTEBOOK_CSS, page.url or ".")
    output = _STYLE.sub("", output)
    output = _RICH_CELL.sub(_readable_cell, output)
    # Before the theme's and the site's own stylesheets, so that extra.css can correct it.
    link = f'<link rel="stylesheet" href="{href}">\n'
    first = output.index('<link rel="stylesheet"')
    return output[:first] + link + output[first:]


# A sharding diagram printed by a notebook's kernel is rich's HTML, with jax's own choice of
# label colour; on the pages, labels get the black or white that reads on their cell, as the
# guide pages' diagrams do (snippets/render.py).
_RICH_CELL = re.compile(
    r"color: (#[0-9a-f]{6}); text-decoration-color: #[0-9a-f]{6}; "
    r"background-color: (#[0-9a-f]{6})"
)


def _readable_cell(match: re.Match) -> str:
    from snippets.render import readable_text_colour

    text = readable_text_colour(match.group(2))
    return f"color: {text}; text-decoration-color: {text}; background-color: {match.group(2)}"
