import re

import pytest

from snippets.concepts.collectives import (
    hlo_table,
)


@pytest.fixture(scope="module")
def found(devices):
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()) as out:
        arrays, functions = hlo_table.page_programs()
        start = len(out.getvalue())
        result = hlo_table.hlo_table(hlo_table.page_examples(*arrays, **functions))
    return result, out.getvalue()[start:]


EVERYONE = [list(range(8))]


@pytest.mark.parametrize(
    ("name", "ops", "combiners", "groups"),
    [
        ("psum", ["1 all-reduce"], ["add"], [EVERYONE]),
        (
            "psum over y (2 x 4)",
            ["1 all-reduce"],
            ["add"],
            [[[0, 1, 2, 3], [4, 5, 6, 7]]],
        ),
        ("pmean", ["1 all-reduce"], ["add"], [EVERYONE]),
        ("pmax", ["1 all-reduce"], ["maximum"], [EVERYONE]),
        ("all_gather", ["1 all-gather"], [], [EVERYONE]),
        ("all_gather, tiled", ["1 all-gather"], [], [EVERYONE]),
        # Written by hand in a shard_map, it stays a reduce-scatter even on CPU.
        ("psum_scatter", ["1 reduce-scatter"], ["add"], [EVERYONE]),
        (
            "ppermute, ring",
            ["1 collective-permute"],
            [],
            [[[i, (i + 1) % 8] for i in range(8)]],
        ),
        ("all_to_all", ["1 all-to-all"], [], [EVERYONE]),
        ("axis_index (2 x 4)", ["partition-id"], [], []),
    ],
)
def test_each_collective_is_one_hlo_operation(found, name, ops, combiners, groups):
    assert found[0][name] == (ops, combiners, groups)


def test_the_table_has_a_row_per_collective(found):
    table = found[1]
    assert table.splitlines()[0].strip() == "On 8 CPU devices"
    body = [line for line in table.splitlines() if line.startswith("│ ")]
    names = [line.split("│")[1].strip() for line in body if line.split("│")[1].strip()]
    assert names.pop(0) == "jax.lax"  # the header
    assert names == list(found[0])
    assert re.search(
        r"│ pmax\s+│ 1 all-reduce \(maximum\)\s+│ \{\{0,1,2,3,4,5,6,7}}", table
    )


def test_hlo_ops_counts_with_count_collectives(found, line_mesh):
    import jax
    from jax import P

    from snippets.hlo import count_collectives

    double = jax.jit(
        jax.shard_map(
            lambda b: b * 2, mesh=line_mesh, in_specs=P("x"), out_specs=P("x")
        )
    )
    x = jax.device_put(jax.numpy.arange(8.0), jax.NamedSharding(line_mesh, P("x")))
    compiled = double.lower(x).compile()
    assert count_collectives(compiled) == {}
    assert hlo_table.hlo_ops(compiled) == ([], [], [])


def test_pmean_is_an_add_all_reduce_then_a_multiply(line_mesh):
    import functools

    import jax

    from snippets.concepts.collectives.diagram import per_device

    def compiled_text(f):
        run = jax.jit(functools.partial(per_device, f, mesh=line_mesh))
        return run.lower(jax.numpy.arange(16.0)).compile().as_text()

    mean = compiled_text(lambda b: jax.lax.pmean(b, "x"))
    total = compiled_text(lambda b: jax.lax.psum(b, "x"))
    assert re.search(r"\smultiply\(", mean)  # by 1/8, on each device
    assert not re.search(r"\smultiply\(", total)


def test_the_cpu_program_names_groups_by_mesh_axis(line_mesh):
    """The page's annotation says so; a release that changes the syntax fails here."""
    import jax
    from jax import P

    total = jax.jit(
        jax.shard_map(
            lambda b: jax.lax.psum(b, "x"),
            mesh=line_mesh,
            in_specs=P("x"),
            out_specs=P(),
        )
    )
    x = jax.device_put(jax.numpy.arange(8.0), jax.NamedSharding(line_mesh, P("x")))
    assert "replica_groups=mesh['x'=8] {'x'}" in total.lower(x).compile().as_text()


def test_each_collective_sends_what_the_ring_model_says(devices, capsys):
    """The cost section: with V the whole array a collective works on, N its group."""
    arrays, functions = hlo_table.page_programs()
    _, _, x, x8 = arrays
    capsys.readouterr()
    costs = hlo_table.cost_table(hlo_table.page_examples(*arrays, **functions))
    assert "axis_index (2 x 4)" not in costs  # nothing sent
    f32 = 4
    small, large = x.size // 8 * f32, x8.size // 8 * f32  # one device's block
    assert costs == {
        "psum": ("all-reduce", 8, small, small, 2 * 7 / 8 * small),
        "psum over y (2 x 4)": ("all-reduce", 4, small, small, 2 * 3 / 4 * small),
        "pmean": ("all-reduce", 8, small, small, 2 * 7 / 8 * small),
        "pmax": ("all-reduce", 8, small, small, 2 * 7 / 8 * small),
        "all_gather": ("all-gather", 8, small, 8 * small, 7 / 8 * 8 * small),
        "all_gather, tiled": ("all-gather", 8, small, 8 * small, 7 / 8 * 8 * small),
        "psum_scatter": ("reduce-scatter", 8, large, large // 8, 7 / 8 * large),
        "ppermute, ring": ("collective-permute", None, small, small, small),
        "all_to_all": ("all-to-all", 8, large, large, 7 / 8 * large),
    }
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["jax.lax", "HLO", "N", "block", "result", "sent"]
    assert lines[1].split() == ["psum", "all-reduce", "8", "8", "8", "14"]
