import re

import jax.numpy as jnp
import numpy as np
import pytest
from jax import P
from jax.sharding import NamedSharding

from snippets.concepts.collectives import diagram
from tests.concepts.collectives.ansi import cells

BLOCKS = 10 * np.arange(8.0)[:, None] + np.arange(2)  # row d: device d's block of x


def test_the_data_puts_the_device_number_in_the_tens_digit(line_mesh, capsys):
    x, x8 = diagram.build_data(line_mesh)
    np.testing.assert_array_equal(x, BLOCKS.ravel())
    np.testing.assert_array_equal(
        x8, (10 * np.arange(8.0)[:, None] + np.arange(8)).ravel()
    )
    assert (
        capsys.readouterr().out.splitlines()[0].startswith("float32[16] [ 0.  1. 10.")
    )


def test_per_device_returns_each_devices_block_and_result_as_rows(line_mesh, mesh):
    for on in (line_mesh, mesh):
        before, after = diagram.per_device(
            lambda b: b * 3, jnp.asarray(BLOCKS.ravel()), on
        )
        assert before.shape == after.shape == (8, 2)
        by_rows = NamedSharding(on, P(on.axis_names))
        assert before.sharding.is_equivalent_to(by_rows, 2)
        for shard in after.addressable_shards:
            d = shard.device.id  # on both meshes, device d holds block d
            np.testing.assert_array_equal(shard.data, [BLOCKS[d] * 3])


def test_per_device_needs_a_length_the_devices_divide(line_mesh):
    with pytest.raises(
        ValueError,
        match=re.escape(
            "per_device splits dimension 0 of x over all 8 devices, so it must be a "
            "multiple of 8; x has shape (12,)."
        ),
    ):
        diagram.per_device(lambda b: b, jnp.arange(12.0), line_mesh)
    with pytest.raises(ValueError, match=r"x has shape \(\)"):
        diagram.per_device(lambda b: b, jnp.array(1.0), line_mesh)


def test_show_per_device_draws_a_row_per_device_with_shapes(line_mesh, capsys):
    before, after = diagram.per_device(
        lambda b: jnp.stack([b, b]), jnp.asarray(BLOCKS.ravel()), line_mesh
    )
    diagram.show_per_device(before, after, "a title")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].strip() == "a title"
    assert [cell.strip() for cell in lines[2].split("│")[1:4]] == [
        "device",
        "before",
        "after",
    ]
    assert lines[-1].strip() == "per device: (2,) -> (2, 2)"
    rows = [line for line in lines if line.startswith("│ cpu:")]
    assert [row.split()[1] for row in rows] == [f"cpu:{d}" for d in range(8)]
    assert rows[3].split("│")[2].split() == ["30", "31"]
    assert rows[3].split("│")[3].split() == ["[30", "31][30", "31]"]


def test_show_per_device_refuses_arrays_without_one_row_per_device(line_mesh):
    before, _ = diagram.per_device(lambda b: b, jnp.arange(16.0), line_mesh)
    with pytest.raises(ValueError, match="needs one row per device, as per_device"):
        diagram.show_per_device(before, jnp.arange(16.0), "title")


def test_numbers_keep_the_colour_of_the_device_they_started_on(
    line_mesh, coloured_tables, capsys
):
    before, after = diagram.per_device(
        lambda b: b[::-1], jnp.asarray(BLOCKS.ravel()), line_mesh
    )
    diagram.show_per_device(before, after, "reversed")
    rows = cells(capsys.readouterr().out)
    assert len(rows) == 8
    for d, (device, held, got) in enumerate(rows):
        colour = diagram.COLOURS[d]
        assert device == [(f"cpu:{d}", colour)]
        assert held == [(f"{10 * d}", colour), (f"{10 * d + 1}", colour)]
        assert got == [(f"{10 * d + 1}", colour), (f"{10 * d}", colour)]


def test_new_numbers_and_integer_results_stay_uncoloured(
    line_mesh, coloured_tables, capsys
):
    before, after = diagram.per_device(lambda b: b + 0.5, jnp.arange(16.0), line_mesh)
    diagram.show_per_device(before, after, "new numbers")
    before, positions = diagram.per_device(
        lambda b: b.astype(jnp.int32), jnp.arange(16.0), line_mesh
    )
    diagram.show_per_device(before, positions, "same values, another dtype")
    for row in cells(capsys.readouterr().out):
        assert {colour for _, colour in row[2]} == {None}


def test_every_cell_sits_on_the_white_card_so_it_reads_on_a_dark_page(
    line_mesh, coloured_tables, capsys
):
    before, after = diagram.per_device(
        lambda b: b[::-1], jnp.asarray(BLOCKS.ravel()), line_mesh
    )
    diagram.show_per_device(before, after, "reversed")
    rows = [line for line in capsys.readouterr().out.splitlines() if "│" in line]
    assert len(rows) == 9  # the header and a row per device
    for line in rows:
        coloured = [c for c in re.findall(r"\x1b\[([\d;]*)m", line) if "38;2;" in c]
        assert coloured, line
        assert all("48;2;255;255;255" in code for code in coloured), line
