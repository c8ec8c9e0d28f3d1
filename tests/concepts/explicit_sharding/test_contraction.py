import inspect

import jax
import jax.numpy as jnp
import numpy as np
from jax import P

from snippets.concepts.explicit_sharding import contraction
from snippets.hlo import count_collectives

X = np.arange(32.0).reshape(8, 4)
W = np.arange(32.0).reshape(4, 8)


def test_a_split_contracting_dimension_is_ambiguous(x, explicit_mesh, capsys):
    capsys.readouterr()
    w = contraction.ambiguous(x, explicit_mesh)
    np.testing.assert_array_equal(w, W)
    assert str(jax.typeof(w)) == "float32[4@y,8]"
    assert capsys.readouterr().out.splitlines() == [
        "x: float32[8@x,4@y]  w: float32[4@y,8]",
        "ShardingTypeError: Contracting dimensions are sharded and it is ambiguous "
        "how the output should be sharded. Please specify the output sharding via "
        "the `out_sharding` parameter. Got lhs_contracting_spec=('y',) and "
        "rhs_contracting_spec=('y',)",
    ]


def test_the_same_error_inside_jit(x, explicit_mesh):
    w = contraction.ambiguous(x, explicit_mesh)
    try:
        jax.jit(lambda a, b: a @ b)(x, w)
    except Exception as err:
        assert type(err).__name__ == "ShardingTypeError"
        assert str(err).startswith("Contracting dimensions are sharded")
    else:
        raise AssertionError("the contraction was not refused")


def test_whole_rows_take_one_all_reduce(x, explicit_mesh, compiled, capsys):
    w = contraction.ambiguous(x, explicit_mesh)
    capsys.readouterr()
    xw = contraction.whole_rows(x, w, explicit_mesh)
    np.testing.assert_array_equal(xw, X @ W)
    assert str(jax.typeof(xw)) == "float32[8@x,8]"
    assert {s.data.shape for s in xw.addressable_shards} == {(4, 8)}
    assert [count_collectives(c) for c in compiled] == [{"all-reduce": 1}]
    assert capsys.readouterr().out.splitlines() == [
        "float32[8@x,4@y], float32[4@y,8] -> float32[8@x,8]",
        "all-reduce          1",
    ]


def test_blocks_also_take_one_all_reduce_on_cpu(x, explicit_mesh, compiled, capsys):
    w = contraction.ambiguous(x, explicit_mesh)
    capsys.readouterr()
    xw = contraction.blocks(x, w, explicit_mesh)
    np.testing.assert_array_equal(xw, X @ W)
    assert xw.sharding.spec == P("x", "y")
    assert {s.data.shape for s in xw.addressable_shards} == {(4, 2)}
    # No reduce-scatter on the CPU backend: an all-reduce, then each keeps its part.
    assert [count_collectives(c) for c in compiled] == [{"all-reduce": 1}]
    assert capsys.readouterr().out.splitlines() == [
        "float32[8@x,4@y], float32[4@y,8] -> float32[8@x,8@y]",
        "all-reduce          1",
    ]


def test_the_contractions_that_take_out_sharding():
    for f in (jnp.matmul, jnp.dot, jnp.einsum, jax.lax.dot_general):
        assert "out_sharding" in inspect.signature(f).parameters
