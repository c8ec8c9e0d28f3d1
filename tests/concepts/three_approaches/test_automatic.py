import numpy as np
import pytest
from jax import P
from jax.sharding import AxisType

from snippets.concepts.three_approaches import automatic, layer
from snippets.hlo import count_collectives


@pytest.fixture(scope="module")
def placed():
    x, W, b, reference = layer.make_data()
    return (*automatic.place_on_auto_mesh(x, W, b), reference)


def test_the_auto_mesh_and_the_drawing_of_w(capsys):
    x, W, b, _ = layer.make_data()
    capsys.readouterr()
    auto_mesh, _, W_auto, _ = automatic.place_on_auto_mesh(x, W, b)
    assert auto_mesh.axis_types == (AxisType.Auto,)
    assert W_auto.sharding.spec == P("x", None)
    out = capsys.readouterr().out
    assert [f"CPU {i}" in out for i in range(8)] == [True] * 8
    assert out.count("├") == 7  # eight bands, one above the other


def test_jit_inserts_one_all_reduce_and_replicates_the_output(placed, capsys):
    _, x_auto, W_auto, b_auto, reference = placed
    capsys.readouterr()
    auto_out, auto_compiled = automatic.run_automatic(x_auto, W_auto, b_auto, reference)
    np.testing.assert_allclose(auto_out, reference, rtol=1e-6)
    assert auto_out.sharding.spec == P()
    assert auto_out.sharding.is_fully_replicated
    assert count_collectives(auto_compiled) == {"all-reduce": 1}
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:] == [
        "matches NumPy: True",
        "output spec: P()",
        "all-reduce          1",
    ]
