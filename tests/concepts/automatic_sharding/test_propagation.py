import jax
import numpy as np
import pytest
from jax import P
from jax.sharding import AxisType

from snippets.concepts.automatic_sharding import propagation
from snippets.hlo import count_collectives

X = np.arange(32.0).reshape(8, 4)
W = np.arange(32.0).reshape(4, 8)


def test_the_mesh_is_2_by_4_with_auto_axes(auto_mesh, capsys):
    assert dict(auto_mesh.shape) == {"x": 2, "y": 4}
    assert auto_mesh.axis_types == (AxisType.Auto, AxisType.Auto)
    propagation.build_mesh()
    assert capsys.readouterr().out == "Mesh('x': 2, 'y': 4, axis_types=(Auto, Auto))\n"


def test_x_is_split_both_ways_and_untyped(auto_mesh, capsys):
    x = propagation.place_input(auto_mesh)
    np.testing.assert_array_equal(x, X)
    assert x.sharding.spec == P("x", "y")
    assert {s.data.shape for s in x.addressable_shards} == {(4, 1)}
    assert str(jax.typeof(x)) == "float32[8,4]"  # Auto axes: not in the type
    assert capsys.readouterr().out.splitlines() == [
        "x: (8, 4) P('x', 'y')",
        "each device holds (4, 1)",
    ]


def test_elementwise_keeps_the_sharding_and_needs_no_collective(x, compiled, capsys):
    capsys.readouterr()
    y = propagation.elementwise(x)
    np.testing.assert_allclose(y, 2 * np.sin(X) + 1, rtol=1e-6)
    assert y.sharding.spec == P("x", "y")
    assert [count_collectives(c) for c in compiled] == [{}]
    assert capsys.readouterr().out.splitlines() == [
        "output spec: P('x', 'y')",
        "collectives: none",
    ]


def test_reductions_over_split_dimensions_all_reduce(x, compiled, capsys):
    capsys.readouterr()
    column_sums, total = propagation.reductions(x)
    np.testing.assert_array_equal(column_sums, X.sum(axis=0))
    assert column_sums.sharding.spec == P("y")
    assert {s.data.shape for s in column_sums.addressable_shards} == {(1,)}
    assert float(total) == X.sum()
    assert total.sharding.spec == P()
    # One all-reduce over x for the column sums; the total reduces over y, then x.
    assert [count_collectives(c) for c in compiled] == [
        {"all-reduce": 1},
        {"all-reduce": 2},
    ]
    assert capsys.readouterr().out.splitlines() == [
        "output spec: P('y',)",
        "all-reduce          1",
        "output spec: P()",
        "all-reduce          2",
        "total: 496.0 = 496.0",
    ]


def test_a_split_contracting_dimension_is_all_reduced(x, auto_mesh, compiled, capsys):
    w, xw = propagation.contracting_matmul(x, auto_mesh)
    assert w.sharding.spec == P("y", None)
    np.testing.assert_array_equal(xw, X @ W)
    assert xw.sharding.spec == P("x")
    assert {s.data.shape for s in xw.addressable_shards} == {(4, 8)}
    assert [count_collectives(c) for c in compiled] == [{"all-reduce": 1}]
    assert capsys.readouterr().out.splitlines()[-2:] == [
        "output spec: P('x',)",
        "all-reduce          1",
    ]


def test_whole_contracting_dimensions_need_no_collective(auto_mesh, compiled, capsys):
    rows, cols, outer = propagation.free_matmul(auto_mesh)
    assert rows.sharding.spec == P("x", None) and cols.sharding.spec == P(None, "y")
    np.testing.assert_array_equal(outer, X @ W)
    assert outer.sharding.spec == P("x", "y")
    assert {s.data.shape for s in outer.addressable_shards} == {(4, 2)}
    assert [count_collectives(c) for c in compiled] == [{}]
    assert capsys.readouterr().out.splitlines() == [
        "output spec: P('x', 'y')",
        "collectives: none",
    ]


def test_show_needs_arguments():
    with pytest.raises(ValueError, match=r"needs arguments to compile f for"):
        propagation.show(lambda: 1.0)


def test_elementwise_work_communicates_only_when_the_operands_are_split_differently(
    auto_mesh,
):
    # The tip's claim, and the case that broke its old "element-wise work never does".
    from jax.sharding import NamedSharding

    alike = jax.device_put(X, NamedSharding(auto_mesh, P("x", "y")))
    swapped = jax.device_put(X, NamedSharding(auto_mesh, P("y", "x")))
    add = jax.jit(lambda a, b: a + b)
    assert count_collectives(add.lower(alike, alike).compile()) == {}
    assert count_collectives(add.lower(alike, swapped).compile())
    np.testing.assert_array_equal(add(alike, swapped), 2 * X)
