"""Output blocks on a narrow screen (docs_build/prose.py): only an exception's message is
marked to wrap; printed tables and arrays keep their lines."""

import re

from docs_build import render
from docs_build.outputs import ROOT
from docs_build.prose import mark_prose_output, prose_lines


def test_a_table_keeps_every_line():
    table = "parameter    shape      spec\nup.kernel    (32, 16)   P('data',)\n"
    assert not any(prose_lines(table))


def test_an_exception_message_wraps_until_the_output_after_it():
    text = (
        "x: float32[8@x,4@y]  w: float32[4@y,8]\n"
        "device_put: ValueError: a message that goes on\n"
        "\n"
        "and on, over a second paragraph\n"
        "float32[16] [ 0.  1.  2.]\n"
    )
    assert prose_lines(text) == [False, True, False, True, False, False]


def test_the_output_blocks_of_a_page_get_their_message_lines_marked():
    page = (
        '<div class="language-text highlight output no-copy" data-search-exclude="output">'
        '<span class="filename">Output</span><pre><span></span><code>a  b\n'
        "TypeError: can&#39;t\n</code></pre></div>"
        '<div class="language-python highlight"><pre><code>ValueError: not output\n'
        "</code></pre></div>"
    )
    marked = mark_prose_output(page)
    assert re.findall(r'<span class="output-prose">(.*?)</span>', marked) == [
        "TypeError: can&#39;t"
    ]
    assert "a  b\n" in marked and "<code>ValueError: not output" in marked


def test_the_stylesheet_has_a_dark_colour_for_every_device_colour():
    """The per-device tables are styled inline for a notebook; the site matches each inline
    device colour to a colour of the scheme (extra.css)."""
    css = (ROOT / "docs" / "stylesheets" / "extra.css").read_text(encoding="utf-8")
    for i, colour in enumerate(render.DEVICE_COLOURS):
        # one rule for the tables and the step-flow figures (docs_build.figures)
        rule = re.escape(f'table.per-device [style*="{colour}"]') + r"[^{]*"
        assert re.search(rule + re.escape(f"{{ color: var(--device-{i})"), css)
        assert f'svg.blocks [fill="{colour}"] {{ fill: var(--device-{i}); }}' in css
        # the arrows of docs_build.figures (collectives, a ring, a dispatch) are strokes
        assert f'svg.blocks [stroke="{colour}"] {{ stroke: var(--device-{i}); }}' in css
        assert len(re.findall(rf"--device-{i}: #[0-9a-f]{{6}};", css)) == 2
