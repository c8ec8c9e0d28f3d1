"""Annotation markers (`# (1)!`) shown only where their list follows the block."""

import re
from pathlib import Path

import pytest

import docs_build.built_site
from docs_build.hooks import drop_unlisted_markers

CODE = (
    '<div class="language-python highlight"><pre><span></span><code>'
    '<span class="n">x</span> <span class="o">=</span> <span class="mi">1</span>'
    '  <span class="c1"># (1)!</span>\n'
    '<span class="n">y</span>  <span class="c1"># a comment (2)</span>\n'
    "</code></pre></div>"
)


def test_a_block_followed_by_its_list_keeps_its_markers():
    html = CODE + "\n<ol>\n<li>One.</li>\n</ol>"
    assert drop_unlisted_markers(html) == html


def test_a_block_without_a_list_loses_its_markers_and_nothing_else():
    html = CODE + "\n<p>Prose.</p>"
    dropped = drop_unlisted_markers(html)
    assert "(1)!" not in dropped
    assert '<span class="mi">1</span>\n' in dropped  # the code, without the marker
    assert "# a comment (2)" in dropped and "<p>Prose.</p>" in dropped


@pytest.fixture(scope="module")
def built_site():
    return docs_build.built_site.built_site()


@pytest.mark.slow
def test_no_page_shows_a_marker_its_block_does_not_explain(built_site):
    """The remat and mixed-precision pages reuse the transformer page's annotated code in
    their setup folds, without its lists."""
    blocks = re.compile(r'<div class="language-\w+ highlight">.*?</pre></div>', re.S)
    shown = []
    for page in sorted(Path(built_site).rglob("index.html")):
        if "notebooks" in page.parts:
            continue
        html = page.read_text(encoding="utf-8")
        for block in blocks.finditer(html):
            listed = html[block.end() :].lstrip().startswith("<ol>")
            if "(1)!" in block[0] and not listed:
                shown.append(str(page.relative_to(built_site)))
    assert shown == []
    remat = (Path(built_site) / "advanced/remat/index.html").read_text(encoding="utf-8")
    # the transformer page's `jax.reshard(x, spec)  # (1)!`, in the remat page's setup fold
    line = 'reshard<span class="p">(</span>x<span class="p">,</span> spec<span class="p">)</span>'
    assert remat.count(line) >= 1 and remat.count(line + "  <span") == 0
