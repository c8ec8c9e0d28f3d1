import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import P
from jax.sharding import AxisType, NamedSharding

from snippets.concepts.explicit_sharding import contraction, unreduced
from snippets.concepts.explicit_sharding.sharding_in_types import arange_on
from snippets.hlo import count_collectives

X = np.arange(32.0).reshape(8, 4)
W = np.arange(32.0).reshape(4, 8)
BATCH = np.arange(32.0).reshape(8, 4)


@pytest.fixture
def w(x, explicit_mesh):
    return contraction.ambiguous(x, explicit_mesh)


@pytest.fixture
def parts(x, w, explicit_mesh):
    return unreduced.partial_sums(x, w, explicit_mesh)


def test_an_unreduced_result_is_partial_sums_with_no_collective(
    x, w, explicit_mesh, compiled, capsys
):
    capsys.readouterr()
    parts = unreduced.partial_sums(x, w, explicit_mesh)
    assert str(jax.typeof(parts)) == "float32[8@x,8]{U:y}"
    assert [count_collectives(c) for c in compiled] == [{}]
    # Each device holds its rows of x times its slice of the contracted dimension.
    for shard in parts.addressable_shards:
        i, k = np.argwhere(explicit_mesh.devices == shard.device)[0]
        expected = X[4 * i : 4 * i + 4, k : k + 1] @ W[k : k + 1, :]
        np.testing.assert_array_equal(shard.data, expected)
    assert capsys.readouterr().out.splitlines() == [
        "float32[8@x,4@y], float32[4@y,8] -> float32[8@x,8]{U:y}",
        "collectives: none",
        "cpu:0 holds x[:4, :1] @ w[:1]: True",
    ]


def test_the_whole_array_cannot_be_read(parts):
    with pytest.raises(
        Exception, match=r"unreduced.*does not support UniqueIndexDomains"
    ):
        np.asarray(parts)


def test_reshard_adds_the_parts_with_one_all_reduce(parts, explicit_mesh, compiled):
    finished = unreduced.finish(parts, explicit_mesh)
    np.testing.assert_array_equal(finished, X @ W)
    assert str(jax.typeof(finished)) == "float32[8@x,8]"
    assert [count_collectives(c) for c in compiled] == [{"all-reduce": 1}]


def test_what_partial_sums_refuse(parts, explicit_mesh, capsys):
    capsys.readouterr()
    errors = unreduced.refused(parts, explicit_mesh)
    assert errors == ["ShardingTypeError", "ShardingTypeError", "NameError"]
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("tanh: ShardingTypeError: tanh is a non-linear operation")
    assert out[1].startswith(
        "add: ShardingTypeError: lhs is unreduced while rhs is not"
    )
    assert out[2].startswith("psum: NameError: Found an unbound axis name: y")


def test_two_partial_sums_over_the_same_axis_add(parts):
    both = jax.jit(lambda u: u + u)(parts)
    assert str(jax.typeof(both)) == "float32[8@x,8]{U:y}"
    with jax.set_mesh(parts.sharding.mesh):
        np.testing.assert_array_equal(jax.reshard(both, P("x", None)), 2 * X @ W)


def test_an_axis_cannot_split_and_be_unreduced():
    with pytest.raises(ValueError, match="partitions cannot overlap with unreduced"):
        P("y", None, unreduced={"y"})


def test_auto_axes_refuse_unreduced_and_reduced():
    auto = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    with pytest.raises(
        ValueError, match=r"Unreduced axes can only refer to .*Explicit"
    ):
        NamedSharding(auto, P("x", None, unreduced={"y"}))
    with pytest.raises(ValueError, match=r"Reduced axes can only refer to .*Explicit"):
        NamedSharding(auto, P(reduced={"x"}))


def test_a_reduced_weight_gets_an_unreduced_gradient(explicit_mesh, compiled, capsys):
    capsys.readouterr()
    batch, g, g_parts = unreduced.gradients(explicit_mesh)
    np.testing.assert_array_equal(batch, BATCH)
    expected = 2 * BATCH.T @ (BATCH @ W) / 8
    np.testing.assert_allclose(g, expected, rtol=1e-6)
    assert str(jax.typeof(g)) == "float32[4,8]"
    assert str(jax.typeof(g_parts)) == "float32[4,8]{U:x}"
    assert [count_collectives(c) for c in compiled] == [{"all-reduce": 1}, {}]
    assert capsys.readouterr().out.splitlines() == [
        "float32[4,8], float32[8@x,4] -> float32[4,8]",
        "all-reduce          1",
        "float32[4,8]{R:x}, float32[8@x,4] -> float32[4,8]{U:x}",
        "collectives: none",
    ]


def test_the_gradient_is_summed_where_the_caller_reshards(
    explicit_mesh, compiled, capsys
):
    _, g, g_parts = unreduced.gradients(explicit_mesh)
    del compiled[:]
    capsys.readouterr()
    g_total = unreduced.finish_gradient(g, g_parts, explicit_mesh)
    np.testing.assert_array_equal(g_total, g)
    assert [count_collectives(c) for c in compiled] == [{"all-reduce": 1}]
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(
        "ShardingTypeError: LHS should be reduced along the same axes RHS is unreduced on"
    )
    assert out[1:] == [
        "float32[4,8]{U:x} -> float32[4,8]",
        "all-reduce          1",
        "same as the P() weight's gradient: True",
    ]


def test_two_microbatches_take_one_all_reduce_on_cpu_with_either_weight(
    explicit_mesh,
):
    """The page claims no saving: on CPU the P() weight's step also sums once."""
    batch = arange_on(explicit_mesh, (8, 4), P("x", None))

    def two_microbatches(w, b1, b2):
        g = jax.grad(unreduced.squared_loss)(w, b1)
        g = g + jax.grad(unreduced.squared_loss)(w, b2)
        return jax.reshard(g, NamedSharding(explicit_mesh, P()))

    for spec in (P(), P(reduced={"x"})):
        w = arange_on(explicit_mesh, (4, 8), spec)
        step = jax.jit(two_microbatches).lower(w, batch, batch).compile()
        assert count_collectives(step) == {"all-reduce": 1}


@pytest.mark.parametrize(
    ("w_shape", "batch_shape"),
    [((4, 8), (8, 5)), ((4,), (8, 4)), ((4, 8), (8,))],
)
def test_squared_loss_says_which_shapes_it_needs(w_shape, batch_shape):
    with pytest.raises(ValueError, match=r"Need a \(features, outputs\) weight"):
        unreduced.squared_loss(jnp.ones(w_shape), jnp.ones(batch_shape))
