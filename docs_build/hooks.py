"""MkDocs hooks: run each page's code (through the cache) and show its output under each block.

Registered in mkdocs.yml under `hooks:`. Before any page is rendered, `on_pre_build` brings
every page's outputs up to date (see `docs_build.outputs`) and writes the notebooks with them; a
failing snippet stops the build with its name and traceback. `on_page_markdown` then places, after each Python fence, what that fence
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

from docs_build import notebooks, outputs  # noqa: E402
from docs_build.devices import CACHE_SETTINGS  # noqa: E402
from docs_build.tpu import pages as tpu_pages  # noqa: E402
from docs_build.versions import pages as version_pages  # noqa: E402

_results: dict[str, outputs.PageResult] = {}
_first_shown: dict[
    str, str
] = {}  # `file:section` -> the first page (nav order) showing it


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
    """Run every page's code once (or take it from the cache), then write the notebooks with
    those outputs: before mkdocs collects the files, so that mkdocs-jupyter finds them."""
    _notebook_css.clear()
    _notebook_classes.clear()
    try:
        results = outputs.ensure(outputs.doc_pages())
        written = notebooks.write_all(
            config.site_url or "", config.repo_url or "", results
        )
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


def on_nav(nav, config, files):
    """Note, for each included section, the first page in reading order that shows it."""
    _first_shown.clear()
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
            at = after_annotations(lines, block.end_line)
            lines[at:at] = ["", *"\n\n".join(shown).split("\n"), ""]
    # Last, because they change line numbers: version numbers and tables from the version
    # matrix, and a note under the title when the code needs a newer release.
    try:
        markdown = version_pages.fill("\n".join(lines), page.file.src_uri)
        markdown = tpu_pages.fill(markdown)
        code = "\n".join(block.source for block in blocks)
        link = posixpath.relpath(COMPATIBILITY, posixpath.dirname(page.file.src_uri))
        note = version_pages.needs_note(code, link)
    except (version_pages.VersionsError, tpu_pages.TpuPagesError) as err:
        raise PluginError(str(err)) from None
    if blocks and not notebooks.needs_the_repository(blocks):
        # Every page with code is also a notebook: say where, under the title.
        links = notebooks.links_markdown(
            page.file.src_uri, config.repo_url or "", from_notebook=False
        )
        note = f'<p class="notebook-links" markdown>{links}</p>\n\n{note}'
    if note:
        title, _, rest = markdown.partition("\n")
        markdown = f"{title}\n\n{note}\n{rest}"
    return markdown


COMPATIBILITY = "guides/compatibility.md"


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
    """Markdown for one piece of a block's output: printed text, or a diagram.

    Both are left out of the search index (`data-search-exclude`): they are the code's
    output, megabytes of tables and drawings, while the prose around them names what they
    show.
    """
    if "svg" in chunk:
        return f'<div class="sharding-diagram" data-search-exclude>\n{chunk["svg"]}\n</div>'
    if "html" in chunk:
        return f'<div class="per-device-table" data-search-exclude>\n{chunk["html"]}\n</div>'
    text = chunk["text"].rstrip("\n")
    fence = "`" * max(3, 1 + max(map(len, re.findall("`+", text)), default=0))
    attrs = '.text .output .no-copy title="Output" data-search-exclude="output"'
    return f"{fence}{{{attrs}}}\n{text}\n{fence}"


# Notebook pages: mkdocs-jupyter inlines about 590 KB of JupyterLab CSS into every one. It is
# taken out of the pages and written once, after the build, as a stylesheet the browser caches,
# pruned to the rules whose selectors can match the notebook pages (about a tenth of it: the
# rest styles JupyterLab's widgets, which a static page never has). Render-blocking CSS is what
# slowed a notebook page's first paint on a phone.
NOTEBOOK_CSS = "assets/stylesheets/notebook.css"
_STYLE = re.compile(r"<style[^>]*>.*?</style>\s*", re.DOTALL)
_CLASS_ATTR = re.compile(r"""\bclass=["']([^"']*)["']""")
# Scripts mkdocs-jupyter adds that do nothing here: MathJax with no URL to load it from (no
# notebook has maths), and a loader that would import Mermaid from a CDN (no notebook has a
# diagram). Taken out so that no page so much as names a third-party script.
_DEAD_SCRIPTS = re.compile(
    r'<script src="">\s*</script>\s*'
    r"|<script type=\"module\">(?:(?!</script>).)*?cdnjs\.cloudflare\.com.*?</script>\s*",
    re.DOTALL,
)
_notebook_css: list[str] = []  # the distinct inline CSS of the notebook pages, in order
_notebook_classes: set[str] = set()  # every class name the notebook pages use
_notebook_vars: set[str] = (
    set()
)  # every `var(--name` the notebook pages' own markup reads


def is_notebook(page) -> bool:
    return page.file.src_uri.startswith("notebooks/")


def on_page_context(context, page, config, nav):
    if is_notebook(page):
        page.edit_url = None  # generated from a page: there is no file to edit
    return context


def on_post_page(output, page, config):
    if not is_notebook(page):
        return output
    css = "\n".join(
        re.sub(r"^<style[^>]*>|</style>\s*$", "", s.strip())
        for s in _STYLE.findall(output)
    )
    if css not in _notebook_css:
        _notebook_css.append(css)
    href = posixpath.relpath(NOTEBOOK_CSS, page.url or ".")
    output = _DEAD_SCRIPTS.sub("", _STYLE.sub("", output))
    output = _RICH_CELL.sub(_readable_cell, output)
    for names in _CLASS_ATTR.findall(output):
        _notebook_classes.update(names.split())
    _notebook_vars.update(re.findall(r"var\(\s*--[\w-]+", output))
    # Before the theme's and the site's own stylesheets, so that extra.css can correct it.
    link = f'<link rel="stylesheet" href="{href}">\n'
    first = output.index('<link rel="stylesheet"')
    return output[:first] + link + output[first:]


def on_post_build(config):
    if not _notebook_css:
        return
    # Classes the site's scripts may add at run time (Material wraps each table in a
    # `md-typeset__scrollwrap`, say) count as used: every name a script spells out.
    scripts = "\n".join(
        p.read_text(encoding="utf-8", errors="replace")
        for p in Path(config.site_dir).rglob("*.js")
    )
    classes = _notebook_classes | set(re.findall(r"[A-Za-z_][\w-]*", scripts))
    css = prune_css("\n".join(_notebook_css), classes)
    # The site's own stylesheets and the pages' inline styles may read JupyterLab's variables.
    elsewhere = "\n".join(
        Path(config.docs_dir, name).read_text(encoding="utf-8")
        for name in config.extra_css
        if Path(config.docs_dir, name).is_file()
    )
    css = drop_unused_properties(css, elsewhere + "\n".join(_notebook_vars))
    target = Path(config.site_dir, NOTEBOOK_CSS)
    if not target.exists() or target.read_text(encoding="utf-8") != css:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(css, encoding="utf-8")


def prune_css(css: str, classes: set[str]) -> str:
    """The rules of `css` that can match a page using only these class names.

    A selector is dropped when it needs a class no page has; a rule goes when all its
    selectors do, an `@media` or `@supports` block when all its rules do. Other at-rules
    (`@keyframes`, `@font-face`, ...) are kept whole. Comments are dropped.
    """

    def rule(prelude: str, body: str) -> str | None:
        selectors = [s for s in _split_top(prelude, ",") if _needed(s) <= classes]
        return f"{', '.join(selectors)} {{{body}}}" if selectors else None

    return _rewrite_rules(re.sub(r"/\*.*?\*/", "", css, flags=re.DOTALL), rule)


def drop_unused_properties(css: str, elsewhere: str = "") -> str:
    """`css` without the custom properties (`--name: value`) that nothing reads.

    A property is read when a `var(--name` appears in a kept declaration of `css` or in
    `elsewhere`; dropping one may leave another unread, so it repeats until nothing changes.
    Rules left with no declarations go.
    """
    while True:
        read = set(re.findall(r"var\(\s*(--[\w-]+)", css + "\n" + elsewhere))

        def rule(prelude: str, body: str, read=read) -> str | None:
            declarations = [
                d
                for d in _split_top(body, ";")
                if not d.startswith("--") or d.split(":", 1)[0].strip() in read
            ]
            return f"{prelude} {{{'; '.join(declarations)}}}" if declarations else None

        pruned = _rewrite_rules(css, rule)
        if pruned == css:
            return css
        css = pruned


def _rewrite_rules(css: str, rule) -> str:
    """`css` with each style rule replaced by `rule(prelude, body)`, or dropped on None.

    Rules inside `@media` and `@supports` are rewritten too, and a block left empty goes;
    statements (`@charset`) and other at-rules (`@keyframes`, ...) are kept as they are.
    """
    out = []
    for prelude, body in _css_rules(css):
        if body is None:
            out.append(prelude + ";")
        elif re.match(r"@(media|supports)\b", prelude):
            inner = _rewrite_rules(body, rule)
            if inner:
                out.append(f"{prelude}{{\n{inner}\n}}")
        elif prelude.startswith("@"):
            out.append(f"{prelude}{{{body}}}")
        elif (kept := rule(prelude, body)) is not None:
            out.append(kept)
    return "\n".join(out)


def _css_rules(css: str):
    """Top-level (prelude, body) pairs; body is None for a statement such as `@charset`."""
    depth, start, quote, i = 0, 0, None, 0
    prelude = ""
    while i < len(css):
        c = css[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif c == "{":
            if depth == 0:
                prelude, start = css[start:i].strip(), i + 1
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                yield prelude, css[start:i].strip()
                start = i + 1
        elif c == ";" and depth == 0:
            if css[start:i].strip():
                yield css[start:i].strip(), None
            start = i + 1
        i += 1


def _split_top(text: str, sep: str) -> list[str]:
    """`text` split at `sep` outside brackets, parentheses and strings, each part stripped."""
    parts, depth, quote, current = [], 0, None, []
    for c in text:
        if quote:
            quote = None if c == quote else quote
        elif c in "\"'":
            quote = c
        elif c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == sep and depth == 0:
            parts.append("".join(current).strip())
            current = []
            continue
        current.append(c)
    parts.append("".join(current).strip())
    return [p for p in parts if p]


def _needed(selector: str) -> set[str]:
    """Class names an element must have somewhere for `selector` to match.

    Attribute values and strings are not classes; a class inside `:not()` is not needed. A
    selector with `:is()`, `:where()` or `:has()` is treated as needing nothing (kept).
    """
    if re.search(r":(is|where|has|matches|-\w+-any)\(", selector):
        return set()
    bare = re.sub(r"\[[^\]]*\]|\"[^\"]*\"|'[^']*'", "", selector)
    bare = re.sub(r":not\([^)]*\)", "", bare)
    return set(re.findall(r"\.(-?[A-Za-z_][\w-]*)", bare))


# A sharding diagram printed by a notebook's kernel is rich's HTML, with jax's own choice of
# label colour; on the pages, a label under AA contrast (4.5:1) on its cell gets the black or
# white that reads there, as the guide pages' diagrams do (docs_build/render.py). Colours that
# already read (a device's colour on a white table) stay.
_RICH_CELL = re.compile(
    r"color: (#[0-9a-f]{6}); text-decoration-color: #[0-9a-f]{6}; "
    r"background-color: (#[0-9a-f]{6})"
)


def _readable_cell(match: re.Match) -> str:
    from docs_build.render import contrast, readable_text_colour

    text = match.group(1)
    if contrast(text, match.group(2)) < 4.5:
        text = readable_text_colour(match.group(2))
    return f"color: {text}; text-decoration-color: {text}; background-color: {match.group(2)}"
