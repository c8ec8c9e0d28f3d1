"""docs_build.render: printed text and rich drawings, captured in order, as self-contained SVG."""

import io
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from docs_build import render


def fills(svg: str) -> list[str]:
    return re.findall(r'<rect fill="(#[0-9a-f]{6})"', svg)


def test_text_and_drawings_keep_their_order(mesh):
    x = jax.device_put(jnp.zeros((8, 8)), NamedSharding(mesh, P("x", "y")))
    with render.capture() as captured:
        print("before")
        jax.debug.visualize_array_sharding(x)
        print("after")
    kinds = [type(c).__name__ for c in captured.chunks]
    assert kinds == ["str", "Figure", "str"]
    assert captured.chunks[0] == "before\n" and captured.chunks[2] == "after\n"
    figure = captured.chunks[1]
    assert [f"CPU {i}" for i in range(8)] == re.findall(r"CPU \d", figure.text)
    assert figure.svg.startswith("<svg") and figure.svg.endswith("</svg>")
    assert 'role="img"' in figure.svg and "Sharding diagram: CPU 0 CPU 1" in figure.svg


def test_svg_loads_nothing_and_has_no_blank_line(mesh):
    with render.capture() as captured:
        jax.debug.visualize_sharding((8,), NamedSharding(mesh, P("x")))
    svg = captured.chunks[0].svg
    assert "@font-face" not in svg and "http" not in svg.replace(
        "http://www.w3.org", ""
    )
    assert all(
        line.strip() for line in svg.splitlines()
    )  # Markdown ends raw HTML at a blank line


def test_svg_is_cropped_to_the_drawn_cells(mesh):
    with render.capture() as captured:
        jax.debug.visualize_sharding((8, 8), NamedSharding(mesh, P("x", "y")))
    svg = captured.chunks[0].svg
    width, height = map(
        float, re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg).groups()
    )
    rights = [
        float(x) + float(w)
        for x, w in re.findall(
            r'<rect fill="#\w+" x="([\d.]+)" y="[\d.]+" width="([\d.]+)"', svg
        )
    ]
    assert max(rights) == pytest.approx(width, abs=0.01)
    assert width < 80 * 12.2  # narrower than rich's 80-column console
    assert height > 0


def test_each_block_of_a_two_way_split_has_its_own_colour(mesh):
    # jax before 0.12 alone would paint both halves the same colour.
    with render.capture() as captured:
        jax.debug.visualize_sharding((8, 8), NamedSharding(mesh, P("x")))
    assert len(set(fills(captured.chunks[0].svg))) == 2


def test_capture_restores_stdout_rich_and_jax_after_an_error(mesh):
    import sys

    import rich.console
    from jax._src import debugging

    before = (sys.stdout, rich.console.Console.__init__, debugging.make_color_iter)
    with pytest.raises(ZeroDivisionError), render.capture():
        print("partial")
        1 / 0  # noqa: B018
    assert (
        sys.stdout,
        rich.console.Console.__init__,
        debugging.make_color_iter,
    ) == before


@pytest.mark.parametrize(
    ("background", "text"),
    [
        ("#000000", "#ffffff"),
        ("#ffffff", "#000000"),
        ("#de9ed6", "#000000"),
        ("#393b79", "#ffffff"),
    ],
)
def test_label_colour_has_the_higher_contrast(background, text):
    assert render.readable_text_colour(background) == text


def test_contrast_is_the_wcag_ratio():
    assert render.contrast("#000000", "#ffffff") == pytest.approx(21)
    assert render.contrast("#ffffff", "#000000") == pytest.approx(21)
    assert render.contrast("#777777", "#777777") == pytest.approx(1)
    assert render.contrast("#767676", "#ffffff") == pytest.approx(4.54, abs=0.01)


def test_each_devices_colour_in_the_collectives_tables_reads_on_their_white():
    for colour in [*render.DEVICE_COLOURS, render.CARD_INK]:
        assert render.contrast(colour, render.CARD_PAPER) >= 4.5, colour


# Per-device tables (the collectives page): one row per device, each device's numbers in its
# colour, and a number keeps the colour of the one device that held it before.
BLOCKS = 10 * np.arange(8.0)[:, None] + np.arange(2)  # row d: device d's block


def per_row(line_mesh, rows):
    return jax.device_put(jnp.asarray(rows), NamedSharding(line_mesh, P("x")))


def table_cells(before, after, title="t"):
    from tests.concepts.collectives.cells import cells

    return cells(before, after, title)


def test_a_per_device_table_has_a_row_per_device_and_the_block_shapes(line_mesh):
    before = per_row(line_mesh, BLOCKS)
    after = per_row(line_mesh, np.stack([np.stack([b, b]) for b in BLOCKS]))
    drawn = render.per_device_table(before, after, "a <title>")
    lines = drawn.text.splitlines()
    assert lines[:2] == ["a <title>", "device | before | after"]
    assert lines[5] == "cpu:3 | 30 31 | [30 31][30 31]"
    assert lines[-1] == "per device: (2,) -> (2, 2)"
    assert (
        "a &lt;title&gt;<br><small>per device: (2,) -&gt; (2, 2)</small>" in drawn.html
    )
    assert drawn.html.count("<tr>") == 9  # the header and a row per device
    assert 'scope="col">device</th>' in drawn.html


def test_a_per_device_table_refuses_arrays_without_one_row_per_device(line_mesh):
    before = per_row(line_mesh, BLOCKS)
    with pytest.raises(ValueError, match="needs `after` with one row per device"):
        render.per_device_table(before, per_row(line_mesh, np.arange(16.0)), "t")


def test_numbers_keep_the_colour_of_the_device_they_started_on(line_mesh):
    before = per_row(line_mesh, BLOCKS)
    rows = table_cells(before, per_row(line_mesh, BLOCKS[:, ::-1]))
    assert len(rows) == 8
    for d, (device, held, got) in enumerate(rows):
        colour = render.DEVICE_COLOURS[d]
        assert device == [(f"cpu:{d}", colour)]
        assert held == [(f"{10 * d}", colour), (f"{10 * d + 1}", colour)]
        assert got == [(f"{10 * d + 1}", colour), (f"{10 * d}", colour)]


def test_new_numbers_and_integer_results_stay_uncoloured(line_mesh):
    before = per_row(line_mesh, BLOCKS)
    for after in (BLOCKS + 0.5, BLOCKS.astype(np.int32)):
        for _, _, got in table_cells(before, per_row(line_mesh, after)):
            assert {colour for _, colour in got} == {None}


def test_a_sum_that_equals_another_devices_number_is_still_new_data(line_mesh):
    before = per_row(line_mesh, BLOCKS)
    # Device 0's sum of the first four rows is 60 64: 60 is also device 6's own number.
    sums = np.repeat(BLOCKS.reshape(2, 4, 2).sum(axis=1), 4, axis=0)
    assert sums[0].tolist() == [60.0, 64.0]
    for _, _, got in table_cells(before, per_row(line_mesh, sums)):
        assert {colour for _, colour in got} == {None}


def test_a_number_several_devices_held_has_no_single_owner(line_mesh):
    before = per_row(line_mesh, np.zeros((8, 2)))
    for _, held, got in table_cells(before, before):
        assert {colour for _, colour in got} == {None}
        assert len({colour for _, colour in held}) == 1  # its own, in the before column


def test_the_table_is_a_white_card_in_both_schemes(line_mesh):
    before = per_row(line_mesh, BLOCKS)
    drawn = render.per_device_table(before, before, "t").html
    # The caption is outside the table's box, so it carries the card's colours itself.
    card = f'style="color:{render.CARD_INK};background:{render.CARD_PAPER}"'
    assert f"<caption {card}>t<br>" in drawn
    assert drawn.startswith(
        f'<table class="per-device" style="color:{render.CARD_INK};'
        f'background:{render.CARD_PAPER}">'
    )


def test_uncoloured_text_in_a_rich_drawing_follows_the_page_colour():
    from rich.console import Console
    from rich.table import Table

    table = Table("device", "holds", show_header=False)  # a drawing, as JAX's diagrams
    table.add_row("cpu:0", "[0 1]")
    with render.capture() as captured:
        Console().print(table)
    svg = captured.chunks[0].svg
    assert "fill: currentColor" in svg and "#010203" not in svg
    assert "cpu:0" in captured.chunks[0].text


def test_a_rich_table_of_data_becomes_an_html_table():
    """choosing, collectives, sharding-parameters and inference print rich Tables with a
    header: on the page they are HTML tables, which reflow, with rich's text as their
    plain reading; markup is read, line breaks kept, right-justified columns right-aligned."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title="Per device", caption="compiled for the CPU backend")
    table.add_column("strategy")
    table.add_column("bytes", justify="right")
    table.add_row("FSDP", "2,628\nW/8")
    table.add_row("[bold]2-D[/bold]", "5,280 < 6")
    with render.capture() as captured:
        print("before")
        Console(width=60).print(table)
    before, drawn = captured.chunks
    assert before == "before\n" and isinstance(drawn, render.Html)
    assert drawn.html == (
        "<table><caption>Per device</caption><thead><tr>"
        '<th scope="col">strategy</th><th scope="col" style="text-align:right">bytes</th>'
        "</tr></thead><tbody>"
        '<tr><th scope="row">FSDP</th><td style="text-align:right">2,628<br>W/8</td></tr>'
        '<tr><th scope="row">2-D</th><td style="text-align:right">5,280 &lt; 6</td></tr>'
        "</tbody></table>\n<p><em>compiled for the CPU backend</em></p>"
    )
    printed = io.StringIO()
    Console(file=printed, width=60, color_system=None).print(table)
    assert drawn.text == "\n".join(
        line.rstrip() for line in printed.getvalue().splitlines()
    )
    assert "┃ strategy" in drawn.text


def test_rich_print_is_captured_in_each_block_it_is_used_in():
    import rich
    from rich.table import Table

    for row in ("first", "second"):
        table = Table("block")
        table.add_row(row)
        with render.capture() as captured:
            rich.print(table)
        assert [type(c).__name__ for c in captured.chunks] == ["Html"]
        assert row in captured.chunks[0].text


def test_a_matplotlib_plot_becomes_inline_svg_where_it_is_shown():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.figure()  # pyplot is imported before the block, as on a page
    plt.close("all")
    with render.capture() as captured:
        print("losses")
        plt.plot([3.0, 2.0, 1.0])
        plt.title("loss per step")
        plt.show()
        print("after")
    kinds = [type(c).__name__ for c in captured.chunks]
    assert kinds == ["str", "Figure", "str"]
    plot = captured.chunks[1]
    assert plot.svg.startswith(
        '<svg class="plot" role="img" aria-label="Plot: loss per step"'
    )
    assert "<?xml" not in plot.svg and all(
        line.strip() for line in plot.svg.splitlines()
    )
    assert plt.get_fignums() == []


def test_a_figure_left_open_is_shown_at_the_end_of_the_block():
    import matplotlib.pyplot as plt

    with render.capture() as captured:
        plt.plot([1.0, 2.0])
        print("no show() called")
    assert [type(c).__name__ for c in captured.chunks] == ["str", "Figure"]


def test_the_private_drawing_functions_are_where_render_expects_them():
    """A JAX release that moves them fails here (and `nox -s latest` shows it)."""
    import inspect

    from jax._src import debugging

    for name in render.PRIVATE_DRAWING:
        assert callable(getattr(debugging, name, None)), name
    assert list(inspect.signature(debugging.make_color_iter).parameters) == [
        "color_map",
        "num_rows",
        "num_cols",
    ]


def test_a_moved_private_function_fails_loudly(monkeypatch):
    from jax._src import debugging

    monkeypatch.delattr(debugging, "make_color_iter")
    with pytest.raises(RuntimeError, match="no longer has make_color_iter"):
        render._distinct_colours()


def test_compact_merges_touching_cells_of_one_colour_and_nothing_else():
    def rect(fill, x, y, w):
        return (
            f'<rect fill="{fill}" x="{x}" y="{y}" width="{w}" height="24.65"'
            ' shape-rendering="crispEdges"/>'
        )

    svg = (
        '<svg shape-rendering="crispEdges">'
        + rect("#ffffff", 0, 1.5, 12.2)
        + rect("#ffffff", 12.2, 1.5, 12.2)  # touches the first: one rect
        + rect("#000000", 24.4, 1.5, 12.2)  # another colour
        + rect("#ffffff", 36.6, 1.5, 12.2)  # white again, after the black
        + rect("#ffffff", 48.8, 25.9, 12.2)  # the next row
        + '<text x="0" y="20" textLength="24.4" clip-path="url(#sd1-line-0)">a&#160;b</text>'
        + "</svg>"
    )
    out = render.compact(svg)
    assert re.findall(
        r'<rect fill="(#\w+)" x="([\d.]+)" y="[\d.]+" width="([\d.]+)"', out
    ) == [
        ("#ffffff", "0", "24.4"),
        ("#000000", "24.4", "12.2"),
        ("#ffffff", "36.6", "12.2"),
        ("#ffffff", "48.8", "12.2"),
    ]
    assert "clip-path" not in out and "&#160;" not in out
    assert "a\u00a0b" in out


def test_a_diagram_is_compact(mesh):
    with render.capture() as captured:
        jax.debug.visualize_sharding((8, 8), NamedSharding(mesh, P("x", "y")))
    svg = captured.chunks[0].svg
    assert "clip-path" not in svg and "<clipPath" not in svg and "&#160;" not in svg
    rects = [
        (fill, float(x), y, float(w))
        for fill, x, y, w in re.findall(
            r'<rect fill="(#\w+)" x="([\d.]+)" y="([\d.]+)" width="([\d.]+)"', svg
        )
    ]
    ends = {(fill, y, round(x + w, 1)) for fill, x, y, w in rects}
    touching = [r for r in rects if (r[0], r[2], round(r[1], 1)) in ends]
    assert rects and not touching  # no two cells of one colour left side by side


def test_a_moved_private_function_leaves_nothing_patched(monkeypatch):
    import rich.console
    from jax._src import debugging

    init = rich.console.Console.__init__
    monkeypatch.delattr(debugging, "make_color_iter")
    with (
        pytest.raises(RuntimeError, match="no longer has make_color_iter"),
        render.capture(),
    ):
        pass
    assert rich.console.Console.__init__ is init
