import re

import jax
import numpy as np
import pytest
from jax import P
from jax.sharding import AxisType

from snippets.concepts.explicit_sharding import sharding_in_types

X = np.arange(32.0).reshape(8, 4)


def test_the_mesh_is_2_by_4_with_explicit_axes(explicit_mesh, capsys):
    assert dict(explicit_mesh.shape) == {"x": 2, "y": 4}
    assert explicit_mesh.axis_types == (AxisType.Explicit, AxisType.Explicit)
    sharding_in_types.build_mesh()
    assert capsys.readouterr().out == (
        "Mesh('x': 2, 'y': 4, axis_types=(Explicit, Explicit))\n"
    )


def test_the_type_names_the_mesh_axes_of_each_dimension(explicit_mesh, capsys):
    x, by_rows = sharding_in_types.types_outside_jit(explicit_mesh)
    for array in (x, by_rows):
        np.testing.assert_array_equal(array, X)
        assert array.dtype == np.float32
    assert {s.data.shape for s in x.addressable_shards} == {(4, 1)}
    assert {s.data.shape for s in by_rows.addressable_shards} == {(4, 4)}
    assert capsys.readouterr().out.splitlines() == [
        "x:       float32[8@x,4@y]",
        "by_rows: float32[8@x,4]",
    ]


def test_print_inside_jit_runs_once_per_type(explicit_mesh, capsys):
    x, by_rows = sharding_in_types.types_outside_jit(explicit_mesh)
    capsys.readouterr()
    results = sharding_in_types.types_while_tracing(x, by_rows)
    # x + 1 has x's type, so it reuses the trace; by_rows differs only in sharding
    # and is traced again.
    assert capsys.readouterr().out.splitlines() == [
        "double(x)",
        "  tracing double: a is float32[8@x,4@y]",
        "double(x + 1)",
        "double(by_rows)",
        "  tracing double: a is float32[8@x,4]",
    ]
    for result, expected in zip(results, [2 * X, 2 * (X + 1), 2 * X], strict=True):
        np.testing.assert_array_equal(result, expected)
    assert [str(jax.typeof(r)) for r in results] == [
        "float32[8@x,4@y]",
        "float32[8@x,4@y]",
        "float32[8@x,4]",
    ]


def test_arange_on_places_the_values_as_the_spec_says(explicit_mesh):
    placed = sharding_in_types.arange_on(explicit_mesh, (4, 1), P("x", None))
    np.testing.assert_array_equal(placed, np.arange(4.0).reshape(4, 1))
    assert str(jax.typeof(placed)) == "float32[4@x,1]"


@pytest.mark.parametrize(
    ("shape", "spec", "message"),
    [
        (
            (8, 6),
            P("x", "y"),
            r"implies that array axis 1 is partitioned 4 times, but the dimension "
            r"size is 6",
        ),
        (
            (8,),
            P("x", "y"),
            re.escape("P('x', 'y') has more entries than (8,) has axes."),
        ),
        ((8, 4), P("z"), r"Resource axis: z of P\('z',\) is not found in mesh"),
    ],
)
def test_arange_on_says_what_does_not_fit(explicit_mesh, shape, spec, message):
    with pytest.raises(ValueError, match=message):
        sharding_in_types.arange_on(explicit_mesh, shape, spec)


def test_arange_on_needs_explicit_axes():
    auto = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    with pytest.raises(
        ValueError,
        match=re.escape(
            "The mesh has axis types (Auto, Auto); this page needs Explicit axes"
        ),
    ):
        sharding_in_types.arange_on(auto, (8, 4), P("x"))
