import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import P
from jax.sharding import NamedSharding

from snippets.guides.errors import explicit_types
from snippets.hlo import count_collectives

A = np.arange(32.0).reshape(4, 8)


def test_a_contraction_over_a_sharded_dimension_is_ambiguous(mesh, capsys):
    a, b = explicit_types.contraction(mesh)
    assert a.sharding.spec == P(None, "y") and b.sharding.spec == P("y", None)
    assert capsys.readouterr().out.splitlines() == [
        "a: float32[4,8@y]  b: float32[8@y,2]",
        "ShardingTypeError: Contracting dimensions are sharded and it is ambiguous how "
        "the output should be sharded. Please specify the output sharding via the "
        "`out_sharding` parameter. Got lhs_contracting_spec=('y',) and "
        "rhs_contracting_spec=('y',)",
    ]
    with pytest.raises(Exception) as info:
        a @ b
    assert type(info.value).__name__ == "ShardingTypeError"
    assert not hasattr(jax, "ShardingTypeError")


def test_out_sharding_resolves_it_with_one_all_reduce(mesh, capsys):
    a, b = explicit_types.contraction(mesh)
    capsys.readouterr()
    product, compiled = explicit_types.contraction_fix(mesh, a, b)
    np.testing.assert_allclose(product, A @ np.ones((8, 2)))
    assert product.sharding.is_fully_replicated
    assert count_collectives(compiled) == {"all-reduce": 1}
    assert capsys.readouterr().out.splitlines() == [
        "float32[4,2]",
        "all-reduce          1",
    ]


def test_out_sharding_alternatives_named_on_the_page(mesh):
    a, b = explicit_types.contraction(mesh)
    whole = jnp.matmul(a, b, out_sharding=NamedSharding(mesh, P()))  # no set_mesh
    assert str(jax.typeof(whole)) == "float32[4,2]"
    with jax.set_mesh(mesh):
        by_rows = jnp.matmul(a, b, out_sharding=P("y", None))
    assert str(jax.typeof(by_rows)) == "float32[4@y,2]"
    np.testing.assert_allclose(by_rows, A @ np.ones((8, 2)))


def test_operands_split_over_different_axes(mesh, capsys):
    over_x, over_y = explicit_types.incompatible(mesh)
    assert over_x.sharding.spec == P("x") and over_y.sharding.spec == P("y")
    assert capsys.readouterr().out == (
        "ShardingTypeError: add got incompatible shardings for broadcasting: "
        "('x',), ('y',).\n"
    )


def test_the_operands_are_cut_differently_though_every_element_shares_a_device(mesh):
    """The page's cause: the blocks differ (device 0 holds over_x[0:4], over_y[0:2]). The
    elements themselves are not apart: element i of both sits on some device, for every i."""
    over_x, over_y = explicit_types.incompatible(mesh)

    def held(array):
        found = {}
        for shard in array.addressable_shards:
            found[shard.device.id] = set(range(8)[shard.index[0]])
        return found

    by_x, by_y = held(over_x), held(over_y)
    assert by_x[0] == {0, 1, 2, 3} and by_y[0] == {0, 1}
    assert all(by_x[d] != by_y[d] for d in by_x)
    for i in range(8):
        assert any(i in by_x[d] and i in by_y[d] for d in by_x)


def test_reshard_one_operand_then_add(mesh, capsys):
    over_x, over_y = explicit_types.incompatible(mesh)
    capsys.readouterr()
    total = explicit_types.incompatible_fix(mesh, over_x, over_y)
    np.testing.assert_array_equal(total, 2 * np.arange(8.0))
    assert total.sharding.spec == P("x")
    assert capsys.readouterr().out.startswith("float32[8@x] ")
