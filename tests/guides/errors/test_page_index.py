"""The index at the top of the error gallery quotes the start of each message: check that
every quoted fragment is what the page's code really prints, after the class it names."""

import contextlib
import io
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
from jax import P
from jax.sharding import NamedSharding

from snippets.guides.errors import (
    array_specs,
    device_setup,
    explicit_types,
    nnx_params,
    shard_map_specs,
)

PAGE = Path(__file__).resolve().parents[3] / "docs" / "guides" / "errors.md"
ROW = re.compile(r"^\| `(\w+)` \| (.+?) \| \[.+\]\(#([\w-]+)\) \|$", re.MULTILINE)


def index_rows():
    rows = ROW.findall(PAGE.read_text(encoding="utf-8"))
    assert len(rows) >= 10
    return rows


@pytest.fixture(scope="module")
def printed(mesh, line_mesh):
    """What the page's failing blocks print; the fixes are left to their own tests."""
    x = jax.device_put(jnp.arange(8.0), NamedSharding(line_mesh, P("x")))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        device_setup.too_late()
        device_setup.mesh_too_large()
        array_specs.indivisible(line_mesh)
        array_specs.too_long(mesh, line_mesh)
        array_specs.no_mesh(line_mesh, x)
        array_specs.incompatible_devices()
        explicit_types.contraction(mesh)
        explicit_types.incompatible(mesh)
        shard_map_specs.in_specs_mismatch(line_mesh)
        shard_map_specs.out_specs_too_long(line_mesh, x)
        shard_map_specs.out_specs_replicated(line_mesh, x)
        shard_map_specs.unbound_axis(x)
        shard_map_specs.eager_gradient(line_mesh, x)
        shard_map_specs.loop_carry(line_mesh, x)
        nnx_params.without_mesh()
    return out.getvalue()


@pytest.mark.parametrize(("error", "quoted", "anchor"), index_rows())
def test_each_quoted_message_is_printed_after_its_class(printed, error, quoted, anchor):
    for fragment in re.findall(r'"(.+?)"', quoted):
        parts = [p.strip() for p in fragment.split("...") if p.strip()]
        lines = [line for line in printed.splitlines() if parts[0] in line]
        assert lines, f"{anchor}: {parts[0]!r} is never printed"
        assert any(f"{error}: " in line for line in lines), (anchor, error, lines)
        if len(parts) > 1:
            start = printed.index(parts[0])
            assert all(p in printed[start:] for p in parts[1:]), (anchor, parts)


def test_every_index_row_points_at_a_section_of_the_page():
    text = PAGE.read_text(encoding="utf-8")
    for error, _, anchor in index_rows():
        heading = re.search(rf"^### .*\{{ #{anchor} \}}$", text, re.MULTILINE)
        assert heading, anchor
        assert f"`{error}`" in heading.group(0), (anchor, error)
