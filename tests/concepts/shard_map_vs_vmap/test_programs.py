import re

import jax
import numpy as np
import pytest

from snippets.concepts.shard_map_vs_vmap import batching, nested, programs, sharding


@pytest.fixture(scope="module")
def functions():
    x, expected = batching.make_batch()
    batched, _ = batching.vmap_rows(x, expected)
    mesh, x_rows = sharding.place_rows(x)
    _, shard_map_result = sharding.shard_rows(mesh, x_rows, expected)
    rows_per_device, _ = nested.vmap_inside(mesh, x_rows, shard_map_result)
    return batched, rows_per_device, x, x_rows


def test_vmap_on_sharded_rows_compiles_like_shard_map(functions, capsys):
    capsys.readouterr()
    programs.compare_programs(*functions)
    table = [re.split(r"\s{2,}", line) for line in capsys.readouterr().out.splitlines()]
    assert table == [
        ["program", "devices", "block in", "block out", "collectives"],
        ["vmap, x", "1", "(16, 3)", "(16,)", "none"],
        ["vmap, x_rows", "8", "(2, 3)", "(2,)", "none"],
        ["shard_map, x_rows", "8", "(2, 3)", "(2,)", "none"],
    ]


def test_the_table_shows_collectives_when_there_are_some(functions, capsys):
    batched, _, _, x_rows = functions
    capsys.readouterr()
    programs.per_device_table({"total": (lambda a: batched(a).sum(), x_rows)})
    row = re.split(r"\s{2,}", capsys.readouterr().out.splitlines()[1])
    assert row == ["total", "8", "(2, 3)", "()", "{'all-reduce': 1}"]


def test_the_table_needs_a_placed_jax_array(functions):
    batched = functions[0]
    with pytest.raises(
        TypeError,
        match=r"numpy rows: got a ndarray, not a jax\.Array\. jax\.device_put it "
        r"first: its placement decides the program\.",
    ):
        programs.per_device_table({"numpy rows": (batched, np.zeros((16, 3)))})


def test_vmap_on_split_rows_is_split_before_jit(functions, capsys):
    """One program, typed split over rows already in its jaxpr, not 8 programs."""
    batched, _, _, x_rows = functions
    capsys.readouterr()
    jaxpr = programs.rows_jaxpr(batched, x_rows)
    assert [str(v.aval) for v in jaxpr.jaxpr.invars] == ["float32[16@rows,3]"]
    assert [str(v.aval) for v in jaxpr.jaxpr.outvars] == ["float32[16@rows]"]
    assert "f32[16@rows] = reduce_sum" in capsys.readouterr().out
    # One SPMD program for all 8 devices: one entry computation, on a (2, 3) block.
    hlo = jax.jit(batched).lower(x_rows).compile().as_text()
    assert hlo.count("\nENTRY ") == 1
    assert re.search(r"ENTRY \S+ \(\S+: f32\[2,3\]\) -> f32\[2\]", hlo)
