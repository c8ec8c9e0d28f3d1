import re

import pytest
from jax import P
from jax.sharding import AxisType

from snippets.basics.named_sharding import place_arrays, typeof


@pytest.fixture
def x():
    return place_arrays.unplaced_array()


def test_explicit_axes_put_the_sharding_in_the_type(x, line_mesh, mesh, capsys):
    typeof.explicit_types(x, line_mesh, mesh)
    table = [re.split(r"\s{2,}", line) for line in capsys.readouterr().out.splitlines()]
    assert table == [
        ["mesh", "spec", "jax.typeof", "shard shape"],
        # The same type on both meshes, yet 1 row per device on the first, 4 on the second.
        ["(8,)", "P('x',)", "float32[8@x,4]", "(1, 4)"],
        ["(2, 4)", "P('x',)", "float32[8@x,4]", "(4, 4)"],
        ["(2, 4)", "P('x', 'y')", "float32[8@x,4@y]", "(4, 1)"],
        ["(2, 4)", "P('y', 'x')", "float32[8@y,4@x]", "(2, 2)"],
        ["(2, 4)", "P(('x', 'y'),)", "float32[8@(x,y),4]", "(1, 4)"],
        ["(2, 4)", "P(None, 'y')", "float32[8,4@y]", "(8, 1)"],
        ["(2, 4)", "P()", "float32[8,4]", "(8, 4)"],
    ]


def test_auto_axes_keep_the_layout_but_not_the_type(x, capsys):
    x_auto = typeof.auto_type(x)
    assert x_auto.sharding.mesh.axis_types == (AxisType.Auto, AxisType.Auto)
    assert x_auto.sharding.spec == P("x", "y")
    assert {s.data.shape for s in x_auto.addressable_shards} == {(4, 1)}
    assert capsys.readouterr().out.splitlines()[0] == "jax.typeof: float32[8,4]"
