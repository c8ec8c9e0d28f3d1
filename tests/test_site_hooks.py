"""The site build: outputs placed under their blocks, strict failures that name the snippet,
and a built site that loads nothing from any other host."""

import json
import re
import shutil
from html import escape, unescape
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlparse

import jax
import pytest
from syrupy.extensions.amber import AmberSnapshotExtension

import docs_build.built_site
from docs_build import hooks as site_hooks
from docs_build import notebooks, outputs, portable, render
from docs_build.versions import pages as version_pages

ROOT = Path(__file__).resolve().parent.parent


mkdocs_build = docs_build.built_site.mkdocs_build


@pytest.fixture(scope="module")
def built_site():
    # The strict build of this tree, kept for `nox -s browser` (docs_build/built_site.py).
    return docs_build.built_site.built_site()


@pytest.fixture
def tree_copy(tmp_path, built_site):
    """The site's sources and its warm output cache, copied where a test may break them."""
    for name in ("docs", "snippets", "docs_build"):
        shutil.copytree(
            ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(ROOT / "mkdocs.yml", tmp_path)
    shutil.copy(ROOT / "pyproject.toml", tmp_path)  # its pins are part of the cache key
    shutil.copytree(ROOT / ".cache" / "outputs", tmp_path / ".cache" / "outputs")
    return tmp_path


# <link> relations a browser fetches; "canonical" or "alternate" only name an address.
LOADED_RELS = {
    "stylesheet",
    "icon",
    "apple-touch-icon",
    "mask-icon",
    "manifest",
    "preload",
    "prefetch",
    "modulepreload",
    "preconnect",
    "dns-prefetch",
}


class LoadedURLs(HTMLParser):
    """The URLs a browser fetches when it shows a page (not the links a reader may follow)."""

    def __init__(self):
        super().__init__()
        self.urls: list[str] = []
        self.source_widgets = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("data-md-component") == "source":
            self.source_widgets += 1
        if tag in {
            "script",
            "img",
            "iframe",
            "audio",
            "video",
            "source",
            "embed",
            "track",
            "input",
        }:
            self.urls += [attrs[k] for k in ("src", "poster") if attrs.get(k)]
        if attrs.get("srcset"):
            self.urls += [part.split()[0] for part in attrs["srcset"].split(",")]
        if (
            tag == "link"
            and attrs.get("href")
            and LOADED_RELS & set(attrs.get("rel", "").split())
        ):
            self.urls.append(attrs["href"])
        if tag == "object" and attrs.get("data"):
            self.urls.append(attrs["data"])
        self.urls += re.findall(r"url\(\s*['\"]?([^'\")]+)", attrs.get("style") or "")


def foreign(url: str) -> bool:
    parsed = urlparse(url)
    return bool(parsed.netloc) or parsed.scheme not in {"", "data"}


def test_built_pages_load_nothing_from_another_host(built_site):
    pages = sorted(built_site.rglob("*.html"))
    assert len(pages) >= 4
    for page in pages:
        parser = LoadedURLs()
        parser.feed(page.read_text(encoding="utf-8"))
        assert parser.urls, page  # the theme's own CSS and JS at least
        assert [u for u in parser.urls if foreign(u)] == [], page
        # Material's script asks the GitHub API for stars when it finds this marker.
        assert parser.source_widgets == 0, page
    for sheet in built_site.rglob("*.css"):
        remote = re.findall(
            r"url\(\s*['\"]?(https?:[^'\")]+)", sheet.read_text(encoding="utf-8")
        )
        assert remote == [], sheet


def test_the_checker_flags_a_third_party_request():
    parser = LoadedURLs()
    parser.feed(
        '<link rel="stylesheet" href="https://fonts.googleapis.com/css?family=Roboto">'
        '<link rel="canonical" href="https://example.org/page/">'
        '<script src="../assets/bundle.js"></script><a href="https://github.com/x">repo</a>'
        '<div style="background: url(//cdn.example.com/a.png)"></div>'
    )
    assert [u for u in parser.urls if foreign(u)] == [
        "https://fonts.googleapis.com/css?family=Roboto",
        "//cdn.example.com/a.png",
    ]


def test_outputs_and_versions_appear_on_the_built_page(built_site):
    html = (built_site / "basics" / "devices-and-meshes" / "index.html").read_text(
        "utf-8"
    )
    assert "8 devices on platform" in html
    assert html.count('class="language-text output no-copy highlight"') >= 5
    assert f"jax {jax.__version__}" in html  # the footer names the build's versions


def test_diagrams_are_inline_svg_with_device_labels(built_site):
    svgs = [
        svg
        for page in built_site.rglob("*.html")
        for svg in re.findall(
            r'<svg class="rich-svg".*?</svg>', page.read_text("utf-8"), re.S
        )
    ]
    diagrams = [svg for svg in svgs if re.search(r">CPU\u00a0\d", svg)]
    assert len(diagrams) >= 10  # sharding diagrams; the other drawings are tables
    for svg in svgs:
        assert 'role="img"' in svg and re.search(r'aria-label="[^"]{8,}"', svg)


@pytest.mark.slow
def test_deleting_an_included_section_fails_the_build_naming_it(tree_copy):
    module = tree_copy / "snippets" / "basics" / "devices_and_meshes" / "make_mesh.py"
    text = module.read_text(encoding="utf-8")
    module.write_text(
        text.replace("    # --8<-- [start:too-many-devices]\n", ""), "utf-8"
    )
    proc = mkdocs_build(tree_copy, tree_copy / "site")
    assert proc.returncode != 0
    assert re.search(
        r"basics/devices-and-meshes\.md line \d+: cannot include "
        r"snippets/basics/devices_and_meshes/make_mesh\.py:too-many-devices: Snippet section 'too-many-devices' "
        r"could not be located",
        proc.stderr,
    ), proc.stderr
    assert not (tree_copy / "site" / "index.html").exists()


@pytest.mark.slow
def test_breaking_a_snippet_fails_the_build_with_its_name_and_traceback(tree_copy):
    module = tree_copy / "snippets" / "basics" / "devices_and_meshes" / "make_mesh.py"
    text = module.read_text(encoding="utf-8")
    module.write_text(
        text.replace("    print(mesh)\n", "    print(mesh.size())\n", 1), "utf-8"
    )
    proc = mkdocs_build(tree_copy, tree_copy / "site")
    assert proc.returncode != 0
    assert re.search(
        r"Snippet failed: basics/devices-and-meshes\.md block \d+ \(line \d+: "
        r"snippets/basics/devices_and_meshes/make_mesh\.py:imports, snippets/basics/devices_and_meshes/make_mesh\.py:make-mesh\)",
        proc.stderr,
    ), proc.stderr
    assert "Traceback (most recent call last)" in proc.stderr
    assert "    print(mesh.size())" in proc.stderr
    assert "TypeError: 'int' object is not callable" in proc.stderr


def test_text_output_becomes_a_fenced_block_longer_than_any_backticks_in_it():
    assert site_hooks.chunk_markdown({"text": "a\nb\n"}) == (
        '```{.text .output .no-copy title="Output" data-search-exclude="output"}\na\nb\n```'
    )
    assert site_hooks.chunk_markdown({"text": "x ```` y"}).startswith("`````{")


def test_a_diagram_becomes_a_raw_html_block():
    assert site_hooks.chunk_markdown({"svg": "<svg>s</svg>", "alt": "CPU 0"}) == (
        '<div class="sharding-diagram" data-search-exclude>\n<svg>s</svg>\n</div>'
    )


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (["```", "", "Next paragraph."], 1),
        (
            [
                "```",
                "",
                "1.  First note",
                "    more of it",
                "",
                "2.  Second",
                "",
                "Prose.",
            ],
            6,
        ),
        (["```", "1. Right after", "Prose."], 2),
    ],
)
def test_output_goes_after_a_code_annotation_list(lines, expected):
    assert site_hooks.after_annotations(lines, 1) == expected


def test_notebook_pages_are_marked_up_like_the_guide_pages(built_site):
    """The notebook pages use the site's own markup (docs_build/notebook_templates): each code
    cell a theme code block (so the theme's copy button and colours apply), each printed
    output the guide's output block, each drawing its wrapper; no JupyterLab stylesheet,
    script or per-cell copy icon."""
    for path in sorted((outputs.DOCS / "notebooks").rglob("*.ipynb")):
        rel = path.relative_to(outputs.DOCS / "notebooks").with_suffix("")
        # served where its page would be: the home page's notebooks/index.ipynb at notebooks/
        served = notebooks.url_dir(f"notebooks/{rel.as_posix()}.ipynb")
        html = (built_site / served / "index.html").read_text("utf-8")
        article = html[html.index("<article") : html.index("</article>")]
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        code = [c for c in cells if c["cell_type"] == "code"]
        assert article.count('<div class="language-python highlight"><pre>') == len(
            code
        ), rel
        printed = [
            o for c in code for o in c["outputs"] if o["output_type"] == "stream"
        ]
        drawn = [o for c in code for o in c["outputs"] if o["output_type"] != "stream"]
        assert article.count(
            '<div class="language-text output no-copy highlight">'
        ) == (len(printed)), rel
        assert article.count('<div class="sharding-diagram">') + article.count(
            '<div class="per-device-table">'
        ) == len(drawn), rel
        assert "jp-" not in article and "clipboard-copy" not in article, rel
        assert "<script" not in article, rel
        # the only inline style is the diagrams' own (mkdocs-jupyter appends an empty one)
        outside_svg = re.sub(r"<svg.*?</svg>", "", article, flags=re.DOTALL)
        assert re.findall(r"<style>(.*?)</style>", outside_svg, re.DOTALL) in (
            [],
            [ANY_EMPTY],
        ), rel
    named = (built_site / "notebooks/basics/named-sharding/index.html").read_text(
        "utf-8"
    )
    assert "cdnjs" not in named and '<script src="">' not in named


class _Empty:
    """Equal to an inline style with no rules: mkdocs-jupyter prints the (emptied) list."""

    def __eq__(self, other):
        return other.strip() in ("", "[]")


ANY_EMPTY = _Empty()


@pytest.fixture
def jupyter_settings(monkeypatch):
    """mkdocs-jupyter's settings, put back after the test."""
    from mkdocs_jupyter.config import settings

    monkeypatch.setattr(settings, "templates_dir", settings.templates_dir)
    return settings


def test_the_notebook_template_is_the_one_mkdocs_jupyter_renders_with(jupyter_settings):
    """docs_build.hooks points mkdocs-jupyter at the site's templates through
    `mkdocs_jupyter.config.settings`; if a release stops reading it there, this fails."""
    from mkdocs_jupyter.convert import nb2html

    notebook = sorted((outputs.DOCS / "notebooks").rglob("*.ipynb"))[0]
    site_hooks.use_notebook_templates(SimpleNamespace(plugins={}))
    assert jupyter_settings.templates_dir == str(site_hooks.NOTEBOOK_TEMPLATES)
    html = nb2html(str(notebook))
    assert '<div class="language-python highlight"><pre><span></span><code>' in html
    assert "jp-Cell" not in html and "clipboard-copy" not in html
    assert "highlight-ipynb" not in html  # nbconvert's Pygments stylesheet is left out


def test_a_changed_notebook_template_renders_the_notebooks_again(jupyter_settings):
    """mkdocs-jupyter's cache of rendered notebooks does not know the template: its folder
    is named after the template's hash, so a new template misses the old cache."""
    plugin = SimpleNamespace(
        config={"cache": True, "cache_dir": ".cache/mkdocs-jupyter"}
    )
    config = SimpleNamespace(plugins={"mkdocs-jupyter": plugin})
    site_hooks.use_notebook_templates(config)
    first = plugin.config["cache_dir"]
    assert re.fullmatch(r"\.cache/mkdocs-jupyter/templates-[0-9a-f]{12}", first)
    site_hooks.use_notebook_templates(config)  # again (mkdocs serve): the same folder
    assert plugin.config["cache_dir"] == first


def test_notebook_pages_have_no_edit_link():
    from types import SimpleNamespace

    notebook = SimpleNamespace(
        file=SimpleNamespace(src_uri="notebooks/a.ipynb"), edit_url="e"
    )
    guide = SimpleNamespace(file=SimpleNamespace(src_uri="basics/a.md"), edit_url="e")
    site_hooks.on_page_context({}, notebook, None, None)
    site_hooks.on_page_context({}, guide, None, None)
    assert (notebook.edit_url, guide.edit_url) == (None, "e")


# Golden outputs. What each page printed and drew, compared with the reviewed snapshot in
# __snapshots__/: a release of JAX (or anything else) that changes an output fails here with
# the diff, and `nox -s latest` shows it. After reviewing a change, accept it with
# `nox -s tests -- tests/test_site_hooks.py --snapshot-update`. Defined after the build tests,
# whose build fills the output cache that these read.


def golden(chunks_per_block: list[list[dict]]) -> str:
    """A page's outputs as reviewable text: printed text as is; a diagram as the text it
    draws (its alt text) and the colours of its blocks, which is what a release could change."""
    parts = []
    for number, chunks in enumerate(chunks_per_block, 1):
        for chunk in chunks:
            if "svg" in chunk:
                fills = sorted(
                    set(re.findall(r'fill="(#[0-9a-fA-F]{6})"', chunk["svg"]))
                )
                drawn = without_times(chunk["alt"])
                parts.append(f"--- block {number}: diagram\n{drawn}\nfills: {fills}")
            elif "html" in chunk and render.is_data_table(chunk["html"]):
                # a table of data (render.rich_table), read as rich prints it
                drawn = without_times(chunk["alt"])
                parts.append(f"--- block {number}: table\n{drawn}")
            elif "html" in chunk:
                parts.append(
                    f"--- block {number}: table\n{chunk['alt']}\n{cell_colours(chunk)}"
                )
            else:
                printed = without_printed_times(chunk["text"].rstrip())
                parts.append(f"--- block {number}: text\n{printed}")
    # Python 3.13 suggests a keyword in TypeErrors ("... 'check_rep'. Did you mean
    # 'check_vma'?"); the snapshot is the same on every Python the site supports.
    return re.sub(r"\. Did you mean '\w+'\?", "", "\n".join(parts)) + "\n"


def cell_colours(chunk: dict) -> str:
    """Per row of a per-device table, whose device's colour each number in `after` wears
    (`-` for none): what tells a reader where each number came from."""
    from docs_build.render import DEVICE_COLOURS

    rows = []
    for row in re.findall(r"<tr><th scope=\"row\".*?</tr>", chunk["html"]):
        after = re.findall(r"<td>(.*?)</td>", row)[-1]
        runs = re.findall(r'<span style="color:(#\w+)">([^<]*)</span>|([^<]+)', after)
        owners = []
        for colour, coloured, plain in runs:
            mark = str(DEVICE_COLOURS.index(colour)) if colour else "-"
            owners += [mark] * len((coloured or plain).replace("[", " ").split())
        rows.append(" ".join(owners))
    return "after, by owner: " + " | ".join(rows)


def without_times(table: str) -> str:
    """A rich table whose last column is headed `ms` holds measured times, which differ from
    run to run: they are masked, everything else is compared."""
    if not re.search(r"\bms ┃$", table, re.MULTILINE):
        return table
    return re.sub(
        r"\d+(?:\.\d+)? │$", lambda m: "#" * (len(m[0]) - 2) + " │", table, flags=re.M
    )


_TIMED_LINE = re.compile(r"\d ?(?:µs|ms)\b")
_MEASURED = re.compile(r" *\d+(?:\.\d+)?(?= ?(?:µs|ms)\b|%)")


def without_printed_times(text: str) -> str:
    """Printed text: on a line that reports a time in µs or ms (a measurement), every time
    and every percentage (a share of a measured time) becomes `#`, spaces before it and all,
    so that column widths do not matter. Lines without a time are compared as printed."""
    return "\n".join(
        _MEASURED.sub(" #", line) if _TIMED_LINE.search(line) else line
        for line in text.split("\n")
    )


PAGES_WITH_CODE = [
    page.relative_to(outputs.DOCS).as_posix()
    for page in outputs.doc_pages()
    if outputs.page_blocks(page)
]


@pytest.fixture(scope="module")
def page_outputs():
    return outputs.ensure(outputs.doc_pages())


class PortableAmber(AmberSnapshotExtension):
    """Golden outputs compared as they hold on any CPU: text and integers exactly, floats
    within docs_build.portable's tolerance (XLA's CPU code differs by instruction set)."""

    def matches(self, *, serialized_data, snapshot_data) -> bool:
        return isinstance(snapshot_data, str) and portable.texts_match(
            serialized_data, snapshot_data
        )


@pytest.fixture
def golden_snapshot(snapshot, request):
    # `--snapshot-update` records what the pages print now, digit for digit; a comparison
    # takes float noise within the tolerance.
    if request.config.option.update_snapshots:
        return snapshot
    return snapshot.use_extension(PortableAmber)


@pytest.mark.parametrize("page", PAGES_WITH_CODE)
def test_page_outputs_match_the_reviewed_snapshot(page_outputs, page, golden_snapshot):
    assert golden(page_outputs[page].blocks) == golden_snapshot


@pytest.mark.parametrize("page", PAGES_WITH_CODE)
def test_pages_print_no_float_noise(page_outputs, page):
    """No page prints a float with more digits than the snapshots' tolerance keeps, nor a
    difference at the noise floor: another CPU would print something else."""
    assert portable.unstable(golden(page_outputs[page].blocks)) == []


def test_the_tolerance_takes_noise_and_refuses_a_real_change():
    noise = "loss 3.890 0.405\nmatches: True 40,960 bytes"
    assert portable.texts_match(noise, "loss 3.889 0.405\nmatches: True 40,960 bytes")
    assert not portable.texts_match(
        noise, "loss 3.990 0.405\nmatches: True 40,960 bytes"
    )
    assert not portable.texts_match(
        noise, "loss 3.890 0.405\nmatches: True 40,961 bytes"
    )
    assert not portable.texts_match(
        noise, "loss 3.890 0.405\nmatches: False 40,960 bytes"
    )
    assert portable.unstable("0.5188 1e-05 v5e:2x4 jax 0.12.0.1 4096") == []
    assert portable.unstable("0.51882416 2.6e-07 40960.0 0.0e+00 0.00004") == [
        "0.51882416",
        "2.6e-07",
        "40960.0",
        "0.0e+00",
        "0.00004",
    ]


def test_golden_text_masks_measured_times_and_nothing_else():
    table = "┃ strategy ┃ bytes ┃   ms ┃\n│ dp       │ 1,024 │ 3.62 │\n│ fsdp     │   128 │ 12 │"
    assert without_times(table).splitlines()[1:] == [
        "│ dp       │ 1,024 │ #### │",
        "│ fsdp     │   128 │ ## │",
    ]
    untimed = "┃ strategy ┃ bytes ┃\n│ dp       │ 1,024 │"
    assert without_times(untimed) == untimed


def test_golden_text_masks_printed_times_and_their_shares_only():
    printed = (
        "one device:      155.9 µs per step (median of 50)\n"
        "0                60%      23%      40%    1843.5 µs\n"
        "all-gather.1   collective  441.0 µs, of which waiting 218.4 µs\n"
        "idle: 7/11 of all slots = 64%\n"
        "largest difference from NumPy: 1.4e-06"
    )
    assert without_printed_times(printed).splitlines() == [
        "one device: # µs per step (median of 50)",
        "0 #% #% #% # µs",
        "all-gather.1   collective # µs, of which waiting # µs",
        "idle: 7/11 of all slots = 64%",  # no time on the line: a computed share, kept
        "largest difference from NumPy: 1.4e-06",
    ]


def test_search_finds_each_text_once_and_stays_small(built_site):
    """Notebook pages repeat their guide page, and setup code repeats on every page: neither
    is indexed twice. The index is what a reader's browser downloads to search, compressed:
    every static host (GitHub Pages included) serves JSON gzipped, so the budget is on that.
    It was 250 KB until the takeaways of 31 pages and six new sections (ZeRO, Ulysses, the
    load-balancing loss, the collectives' costs and types, Explicit reshapes) took the index
    to 252 KB: 275 KB kept room for one more round of sections. That round (four new pages:
    mixed precision, remat, pipeline training, overlap; two exercises; UNCONSTRAINED,
    unreduced and committed arrays; the home page's path) took it to 285 KB on 27 November:
    300 KB, again one round of room, not another copy. The expert-parallel page's
    follow-on (data and FSDP beside the experts, issue 31) took it from 299.3 to 302.0 KB
    the same day, and the interleaved pipeline schedule (searchable: a reader who types
    "interleaved" must find it) to 304.4 KB: 310 KB. A section is never left out of search
    to meet this budget; boilerplate and generated tables are."""
    import gzip
    import json

    index = built_site / "search" / "search_index.json"
    assert len(gzip.compress(index.read_bytes())) <= 310_000
    entries = json.loads(index.read_text(encoding="utf-8"))["docs"]
    assert not [e for e in entries if e["location"].startswith("notebooks/")]
    seen: dict[str, str] = {}
    for entry in entries:
        for code in re.findall(r"<pre><code>(.*?)</code></pre>", entry["text"], re.S):
            if len(code) > 200:  # a block, not a one-liner two pages may share
                assert code not in seen, f"{entry['location']} repeats {seen[code]}"
                seen[code] = entry["location"]
    assert len(seen) > 50  # code is still searchable where it is first shown


# The error index (docs/guides/error-index.md, made by docs_build/errorindex.py), read from
# the built site and held against what the pages printed, found here by a plain search of
# the outputs rather than by the code that made the index.
PRINTED_ERROR = re.compile(r"\b([A-Z]\w*(?:Error|Exception|Warning)):(?: (.*))?$")


def printed_error_lines() -> list[tuple[str, str, str, str]]:
    """(page, class, line, message) for every printed line that names an exception class;
    a class with nothing after it (`label: TypeError:`) has its message on the next line."""
    found = []
    for page, result in sorted(outputs.ensure(outputs.doc_pages()).items()):
        for chunks in result.blocks:
            for chunk in chunks:
                lines = chunk.get("text", "").split("\n")
                for i, line in enumerate(lines):
                    if match := PRINTED_ERROR.search(line):
                        below = (s for s in lines[i + 1 :] if s.strip())
                        message = match[2] or next(below, "")
                        found.append((page, match[1], line.strip(), message.strip()))
    return found


def built_page(site: Path, page: str) -> Path:
    return site / page.removesuffix(".md").removesuffix("index") / "index.html"


def built_sections(path: Path, drop: str | None = None) -> list[tuple[str, str]]:
    """A built page's article cut at each heading: (the heading's id, its text and the text
    after it, up to the next heading), tags removed, and first whatever `drop` matches."""
    html = path.read_text(encoding="utf-8")
    if drop:
        html = re.sub(drop, "", html, flags=re.S)
    article = html[html.index("<article") : html.index("</article>")]
    parts = re.split(r'<h[1-6] id="([^"]+)"', article)
    return [
        (anchor, unescape(re.sub(r"<[^>]+>", "", body)))
        for anchor, body in zip(parts[1::2], parts[2::2], strict=True)
    ]


@pytest.fixture(scope="module")
def error_index(built_site) -> list[tuple[str, str, list[tuple[Path, str]]]]:
    """The built index's rows: class, message, and links as (built file, heading id)."""
    index = built_site / "guides" / "error-index" / "index.html"
    html = index.read_text(encoding="utf-8")
    rows = []
    tables = re.findall(
        r'<h2 id="[^"]+"><code>(\w+)</code>.*?</h2>\s*<table>(.*?)</table>', html, re.S
    )
    for kind, table in tables:
        for message, where in re.findall(
            r"<tr>\s*<td>(.*?)</td>\s*<td>(.*?)</td>\s*</tr>", table, re.S
        ):
            links = [
                ((index.parent / href / "index.html").resolve(), anchor)
                for href, anchor in re.findall(
                    r'<a [^>]*?href="([^"#]*)#([^"]+)"', where
                )
            ]
            rows.append((kind, unescape(re.sub(r"</?code>", "", message)), links))
    assert len(rows) >= 40, "the index lost its rows"
    return rows


def test_the_error_index_links_every_printed_error_to_its_section(
    built_site, error_index
):
    """Each error line a page prints is on a row of its class that links the section of the
    built page showing it: the nearest heading above it. The migration page's summary table
    repeats each message in a fold of its cell; the index links the run that printed it."""
    printed = printed_error_lines()
    assert {page for page, *_ in printed} >= {
        "guides/errors.md",
        "guides/migration.md",
        "guides/migration-flax.md",
    }
    for page, kind, line, _ in printed:
        path = built_page(built_site, page).resolve()
        folds = r'<details class="vm-fold.*?</details>'
        under = {anchor for anchor, text in built_sections(path, folds) if line in text}
        assert under, f"{page}: the built page does not show {line!r}"
        linked = {
            anchor
            for row_kind, _, links in error_index
            if row_kind == kind
            for target, anchor in links
            if target == path
        }
        assert under <= linked, f"{page}: {line!r} is under {under}, linked: {linked}"


def test_each_error_index_row_quotes_a_printed_message_and_links_where_it_is_shown(
    built_site, error_index
):
    messages: dict[str, list[str]] = {}
    for _, kind, _, message in printed_error_lines():
        messages.setdefault(kind, []).append(message)
    for kind, text, links in error_index:
        start = text.removesuffix(" \N{HORIZONTAL ELLIPSIS}")
        assert any(m.startswith(start) for m in messages.get(kind, [])), (kind, text)
        assert links, text
        for target, anchor in links:
            sections = dict(built_sections(target))
            assert anchor in sections, f"{text!r} links {target}#{anchor}"
            assert f"{kind}:" in sections[anchor], f"{target}#{anchor} shows no {kind}"


def test_search_finds_each_error_of_the_index_on_the_index_page(
    built_site, error_index
):
    """The tables are not left out of the search index (as printed outputs are): each
    message is in the entry of its class's section of the index page."""
    entries = json.loads(
        (built_site / "search" / "search_index.json").read_text(encoding="utf-8")
    )["docs"]
    ours = [e for e in entries if e["location"].startswith("guides/error-index/")]
    for kind, text, _ in error_index:
        quoted = f"<code>{escape(text, quote=False)}</code>"
        assert [
            e
            for e in ours
            if quoted in e["text"] and f"<code>{kind}</code>" in e["title"]
        ], text


def test_the_theme_reads_the_lazy_code_block_flag(built_site):
    """mkdocs.yml asks for content.lazy, a flag of the theme's code-block component (not
    in its documentation): the built bundle must still read it, or every code block mounts
    at load again (a theme update that drops it fails here, not only in Lighthouse)."""
    assert "\n    - content.lazy\n" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    (bundle,) = (built_site / "assets" / "javascripts").glob("bundle.*.min.js")
    assert '"content.lazy"' in bundle.read_text(encoding="utf-8")
    page = (built_site / "training" / "fsdp" / "index.html").read_text(encoding="utf-8")
    assert '"content.lazy"' in page  # the page's copy of the features the bundle reads


def test_every_page_stays_under_200_kb(built_site):
    """Heavy pages load slowly on a phone: every page, notebook pages included.

    The limit was 150 KB until the pages' HLO helper (snippets/hlo.py) learned to read GPU
    and TPU programs: each page that runs it carries its code, folded, about 40 KB of
    highlighted HTML (5 KB gzipped)."""
    sizes = {
        page.relative_to(built_site).as_posix(): page.stat().st_size
        for page in built_site.rglob("*.html")
    }
    # the guide and exercise pages, home and 404, and a notebook page for most of them
    assert len(sizes) >= 75
    assert {page: size for page, size in sizes.items() if size > 200_000} == {}


def test_guide_pages_drop_the_name_spans_that_draw_nothing(built_site):
    """Material colours pygments' names (class "n") with --md-code-hl-name-color, which is the
    code's own colour; the build drops those spans from every page (a sixth of a code-heavy
    page's HTML) and keeps every other span, so the code reads and copies the same."""
    import material

    css = "".join(
        p.read_text(encoding="utf-8")
        for p in (Path(material.__file__).parent / "templates/assets/stylesheets").glob(
            "main.*.min.css"
        )
    )
    assert ".highlight .n{color:var(--md-code-hl-name-color)}" in css
    assert "--md-code-hl-name-color:var(--md-code-fg-color)" in css
    extra = (outputs.DOCS / "stylesheets" / "extra.css").read_text(encoding="utf-8")
    assert not re.search(r"\.n\b(?![-\w])", extra)
    for page in ("advanced/sequence-parallel", "notebooks/advanced/sequence-parallel"):
        html = (built_site / page / "index.html").read_text("utf-8")
        assert '<span class="n">' not in html, page
        assert '<span class="p">' in html and "ring_attention" in html, page


def test_every_page_with_code_links_its_notebook_and_colab(built_site):
    for page in PAGES_WITH_CODE:
        if notebooks.needs_the_repository(outputs.page_blocks(outputs.DOCS / page)):
            continue  # its code runs only in a clone (tests/test_notebooks.py says which)
        html = (
            built_site / page.removesuffix(".md").removesuffix("index") / "index.html"
        )
        text = html.read_text(encoding="utf-8")
        stem = Path(page).stem
        assert f'{stem}.ipynb" download>' in text, page
        assert "colab.research.google.com/github/" in text, page
        link = re.search(r'<a href="([^"]+\.ipynb)" download>', text)[1]
        notebook = (html.parent / link).resolve()
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        printed = any(outputs.ensure([outputs.DOCS / page])[page].blocks)
        stored = any(c.get("outputs") for c in cells if c["cell_type"] == "code")
        assert stored == printed, page


# What the hook and the versions module add to a page, read from the built site.


def needs_banner(html: str) -> str | None:
    """The body of the "Needs JAX ... or newer" note under a built page's title, as HTML."""
    found = re.search(
        r'<details class="info">\s*<summary>Needs [^<]* or newer</summary>\s*<p>(.*?)</p>',
        html,
        re.S,
    )
    return found[1] if found else None


def test_every_needs_banner_shows_each_api_whole_as_code(built_site):
    """The note names, for each API a page needs, one item of its probe's title as code: not
    cut at a comma inside the code (`nnx.Optimizer(model`), not turned inside out (text as
    code, code as text), with no backtick left over."""
    items = {
        item.strip("`")
        for p in version_pages.PROBES
        for item in p.items
        if re.fullmatch(r"`[^`]+`", item)
    }
    needing = {
        page: version_pages.needs(
            "\n".join(b.source for b in outputs.page_blocks(outputs.DOCS / page))
        )
        for page in PAGES_WITH_CODE
    }
    needing = {page: found for page, found in needing.items() if found}
    assert len(needing) >= 20
    assert {p for p in needing if p.startswith("concepts/")} >= {
        "concepts/shard-map.md",
        "concepts/explicit-sharding.md",
    }
    for page, found in needing.items():
        banner = needs_banner(built_page(built_site, page).read_text(encoding="utf-8"))
        assert banner is not None, page
        uses = re.fullmatch(
            r"The code on this page uses (.*)\. Older releases fail on it; .*",
            banner,
            re.S,
        )
        assert uses, (page, banner)
        assert re.fullmatch(
            r"<code>[^<`]+</code> from (?:JAX|Flax) [\d.]+(?:; <code>[^<`]+</code> from "
            r"(?:JAX|Flax) [\d.]+)*",
            uses[1],
        ), (page, uses[1])
        shown = [unescape(c) for c in re.findall(r"<code>([^<]*)</code>", uses[1])]
        assert shown == [p.items[0].strip("`") for p, _ in found], page
        assert set(shown) <= items, page
        assert "`" not in unescape(re.sub(r"<[^>]+>", "", banner)), page


def test_every_row_of_the_compatibility_matrix_has_all_its_cells(built_site):
    """A message holding a backtick (pvary's messages) once opened a code span that swallowed
    the rest of its row. The built page keeps every cell, every message as written, and stays
    small enough for a phone (under 200 KB)."""
    page = built_site / "guides" / "compatibility" / "index.html"
    assert page.stat().st_size < 200_000
    html = page.read_text("utf-8")
    tables = re.findall(
        r'<div class="version-matrix">\s*<table>(.*?)</table>', html, re.S
    )
    assert len(tables) == 3
    rows = 0
    messages = []
    for table in tables:
        header = re.findall(r"<th\b", table.split("</thead>")[0])
        assert len(header) == 1 + len(version_pages.load()["versions"])
        for row in re.findall(r"<tr>(.*?)</tr>", table.split("</thead>")[1], re.S):
            rows += 1
            cells = re.findall(r"<t[dh]\b[^>]*>(.*?)</t[dh]>", row, re.S)
            assert len(cells) == len(header), row
            for cell in cells:
                text = unescape(re.sub(r"<[^>]+>", "", cell)).strip()
                assert text, row  # every column says what the row did there
                assert "<span" not in text and "`" not in cell.split("vm-message")[0], (
                    row
                )
            messages += [
                unescape(re.sub(r"<[^>]+>", "", m))
                for m in re.findall(r'<div class="vm-message">(.*?)</div>', row, re.S)
            ]
    assert rows == len(version_pages.PROBES)
    assert "title=" not in "".join(tables)
    # The messages still read as they were written, backticks and all.
    assert any("Use `jax.lax.pcast(..., to='varying')" in m for m in messages)


def toc_entries(html: str) -> list[tuple[str, str]]:
    """A built page's table of contents (the sidebar beside the article): (link, text)."""
    start = html.index('<nav class="md-nav md-nav--secondary"')
    toc = html[start : html.index('<div class="md-content"', start)]
    return [
        (href, unescape(text).strip())
        for href, text in re.findall(
            r'<a href="([^"]*)" class="md-nav__link">\s*<span class="md-ellipsis">(.*?)</span>',
            toc,
            re.S,
        )
    ]


def test_notebook_tables_of_contents_keep_the_code_in_headings(built_site):
    """mkdocs-jupyter's own table of contents drops a heading's inline code ("### `psum`" gave
    an empty entry, "## `axis_index`: where am I?" gave ": where am I?", linked to an id the
    page lacks); docs_build.notebook_toc keeps the code's text, as the guide pages do, and
    every entry links to its own heading (a repeated heading's id numbered, as there)."""
    from string import punctuation

    pages = sorted((built_site / "notebooks").rglob("index.html"))
    assert len(pages) >= 30
    tocs = {}
    for path in pages:
        html = path.read_text(encoding="utf-8")
        ids = set(re.findall(r'\bid="([^"]+)"', html))
        tocs[path.parent.relative_to(built_site / "notebooks").as_posix()] = entries = (
            toc_entries(html)
        )
        assert entries, path
        for href, text in entries:
            assert text and text[0] not in punctuation, (path, href, text)
            assert href.startswith("#") and href[1:] in ids, (path, href, text)
    assert ("#psum", "psum") in tocs["concepts/collectives"]
    assert ("#axis_index-where-am-i", "axis_index: where am I?") in tocs[
        "concepts/collectives"
    ]
    assert (
        "#valueerror-a-partitionspec-without-a-mesh",
        "ValueError: a PartitionSpec without a mesh",
    ) in tocs["guides/errors"]


def test_no_output_names_the_build(page_outputs):
    """A traceback, or a JAX message that points at the code, names the block as a reader's
    Python does (`<python-input-N>`), never as the build does (`<page.md block N ...>`)."""
    shown = [
        (page, text)
        for page, result in page_outputs.items()
        for chunks in result.blocks
        for chunk in chunks
        for text in chunk.values()
    ]
    assert [page for page, text in shown if ".md block" in text] == []
    assert any(
        "<python-input-" in text
        for page, text in shown
        if page == "concepts/automatic-sharding.md"
    )


def test_a_drawing_keeps_its_smallest_text_at_11_px():
    """hooks.readable_figures: the minimum width at which a drawing's smallest text (an
    attribute, a style or a `font:` shorthand) is drawn at 11 px; icons (no role=img) and a
    drawing without sizes are left as they are."""
    plot = '<svg viewBox="0 0 760 356" role="img" font-size="12"><text>a</text></svg>'
    assert 'style="min-width:697px"' in site_hooks.readable_figures(plot)
    rich = (
        '<svg class="rich-svg" viewBox="0 0 400 50" role="img" style="color:red">'
        "<style>.m { font-size: 20px; }</style></svg>"
    )
    assert 'style="min-width:220px;color:red"' in site_hooks.readable_figures(rich)
    shorthand = (
        '<svg viewBox="0 0 100 10" role="img"><text style="font: 10px sans">x</text>'
        '<text font-size="13">y</text></svg>'
    )
    assert "min-width:110px" in site_hooks.readable_figures(shorthand)
    notebook = '<svg role="img" viewbox="0 0 760 356" font-size="12"></svg>'
    assert "min-width:697px" in site_hooks.readable_figures(notebook)
    icon = '<svg viewBox="0 0 24 24"><path d="M0 0"/></svg>'
    bare = '<svg viewBox="0 0 24 24" role="img"><path d="M0 0"/></svg>'
    assert site_hooks.readable_figures(icon + bare) == icon + bare
