import jax
import numpy as np
import pytest

from snippets.concepts.explicit_sharding import propagation_rules
from snippets.hlo import count_collectives

X = np.arange(32.0).reshape(8, 4)


def types(*arrays):
    return [str(jax.typeof(a)) for a in arrays]


def test_elementwise_keeps_the_type(x, compiled, capsys):
    capsys.readouterr()
    y = propagation_rules.elementwise(x)
    np.testing.assert_allclose(y, 2 * np.exp(X) + X, rtol=1e-6)
    assert types(y) == ["float32[8@x,4@y]"]
    assert [count_collectives(c) for c in compiled] == [{}]
    assert capsys.readouterr().out.splitlines() == [
        "float32[8@x,4@y] -> float32[8@x,4@y]",
        "collectives: none",
    ]


def test_a_whole_operand_goes_with_a_split_one_without_error(
    x, explicit_mesh, compiled, capsys
):
    # The rules table's row "one operand split, the other whole": no ShardingTypeError.
    capsys.readouterr()
    whole, y = propagation_rules.split_and_whole(explicit_mesh, x)
    np.testing.assert_array_equal(y, X + X)
    assert types(whole, y) == ["float32[8,4]", "float32[8@x,4@y]"]
    assert [count_collectives(c) for c in compiled] == [{}]
    assert capsys.readouterr().out.splitlines() == [
        "float32[8@x,4@y], float32[8,4] -> float32[8@x,4@y]",
        "collectives: none",
    ]
    # The same in one dimension, 8@x + 8, as the table says.
    line = jax.make_mesh((8,), ("x",), axis_types=(jax.sharding.AxisType.Explicit,))
    split = jax.device_put(np.arange(8.0), jax.NamedSharding(line, jax.P("x")))
    assert str(jax.typeof(split + np.arange(8.0))) == "float32[8@x]"


def test_broadcasting_takes_one_mesh_axis_from_each_operand(
    explicit_mesh, compiled, capsys
):
    column, row, table = propagation_rules.broadcasting(explicit_mesh)
    np.testing.assert_array_equal(table, np.arange(4.0)[:, None] + np.arange(8.0))
    assert types(column, row, table) == [
        "float32[4@x,1]",
        "float32[1,8@y]",
        "float32[4@x,8@y]",
    ]
    assert {s.data.shape for s in table.addressable_shards} == {(2, 2)}
    assert [count_collectives(c) for c in compiled] == [{}]
    assert capsys.readouterr().out.splitlines() == [
        "float32[4@x,1], float32[1,8@y] -> float32[4@x,8@y]",
        "collectives: none",
    ]


def test_reductions_drop_the_reduced_axis_and_all_reduce(x, compiled, capsys):
    capsys.readouterr()
    column_sums, row_sums, total = propagation_rules.reductions(x)
    np.testing.assert_array_equal(column_sums, X.sum(axis=0))
    np.testing.assert_array_equal(row_sums, X.sum(axis=1))
    assert float(total) == X.sum()
    assert types(column_sums, row_sums, total) == [
        "float32[4@y]",
        "float32[8@x]",
        "float32[]",
    ]
    assert [count_collectives(c) for c in compiled] == [
        {"all-reduce": 1},
        {"all-reduce": 1},
        {"all-reduce": 2},
    ]
    assert capsys.readouterr().out.splitlines() == [
        "float32[8@x,4@y] -> float32[4@y]",
        "all-reduce          1",
        "float32[8@x,4@y] -> float32[8@x]",
        "all-reduce          1",
        "float32[8@x,4@y] -> float32[]",
        "all-reduce          2",
    ]


def test_show_types_needs_arguments():
    with pytest.raises(
        ValueError, match=r"show_types\(f, \*args\) needs arguments for f"
    ):
        propagation_rules.show_types(lambda: 1.0)
