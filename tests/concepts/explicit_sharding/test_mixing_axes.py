import jax
import numpy as np
import pytest
from jax import P
from jax.sharding import AxisType, NamedSharding

from snippets.concepts.explicit_sharding import contraction, mixing_axes
from snippets.hlo import count_collectives

X = np.arange(32.0).reshape(8, 4)
W = np.arange(32.0).reshape(4, 8)


def test_auto_axes_lets_the_compiler_choose_inside(x, explicit_mesh, compiled, capsys):
    w = contraction.ambiguous(x, explicit_mesh)
    capsys.readouterr()
    xw = mixing_axes.auto_inside_explicit(x, w, explicit_mesh)
    np.testing.assert_array_equal(xw, X @ W)
    assert str(jax.typeof(xw)) == "float32[8@x,8]"
    assert [count_collectives(c) for c in compiled] == [{"all-reduce": 1}]
    assert capsys.readouterr().out.splitlines() == [
        "  inside: float32[8@x,4] float32[4,8] (Explicit, Auto)",
        "result: float32[8@x,8]",
        "all-reduce          1",
    ]


def test_auto_axes_with_a_bare_spec_and_no_mesh_in_context_changes_nothing(
    x, explicit_mesh
):
    # Outside jax.set_mesh, a bare P gives auto_axes no mesh: the axes stay
    # Explicit inside, and the contraction is refused as before (no error names P).
    w = contraction.ambiguous(x, explicit_mesh)
    f = jax.jit(jax.sharding.auto_axes(lambda a, b: a @ b, out_sharding=P("x", None)))
    try:
        f(x, w)
    except Exception as err:
        assert type(err).__name__ == "ShardingTypeError"
        assert str(err).startswith("Contracting dimensions are sharded")
    else:
        raise AssertionError("expected the contraction to be refused")


def test_auto_axes_with_a_named_sharding_needs_no_mesh_in_context(x, explicit_mesh):
    w = contraction.ambiguous(x, explicit_mesh)
    named = NamedSharding(explicit_mesh, P("x", None))
    f = jax.jit(jax.sharding.auto_axes(lambda a, b: a @ b, out_sharding=named))
    xw = f(x, w)
    np.testing.assert_array_equal(xw, X @ W)
    assert str(jax.typeof(xw)) == "float32[8@x,8]"


def test_explicit_axes_types_the_values_inside_an_auto_program(compiled, capsys):
    x_auto, sums = mixing_axes.explicit_inside_auto()
    assert x_auto.sharding.mesh.axis_types == (AxisType.Auto, AxisType.Auto)
    assert str(jax.typeof(x_auto)) == "float32[8,4]"
    np.testing.assert_array_equal(sums, X.sum(axis=1))
    assert sums.sharding.spec == P("x")
    assert [count_collectives(c) for c in compiled] == [{"all-reduce": 1}]
    assert capsys.readouterr().out.splitlines() == [
        "  inside: float32[8@x,4@y] -> float32[8@x]",
        "result: float32[8] with spec P('x',)",
        "all-reduce          1",
    ]


def test_explicit_axes_requires_in_sharding():
    with_no_sharding = jax.sharding.explicit_axes(lambda a: a)
    with pytest.raises(
        TypeError, match=r"Missing required keyword argument: 'in_sharding'"
    ):
        with_no_sharding(np.zeros(3))
