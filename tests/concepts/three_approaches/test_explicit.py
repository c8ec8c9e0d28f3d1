import numpy as np
import pytest
from jax import P
from jax.sharding import AxisType

from snippets.concepts.three_approaches import explicit, layer
from snippets.hlo import count_collectives


@pytest.fixture(scope="module")
def placed():
    x, W, b, reference = layer.make_data()
    return (*explicit.place_on_explicit_mesh(x, W, b), reference)


def test_the_types_carry_the_shardings(capsys):
    x, W, b, _ = layer.make_data()
    capsys.readouterr()
    explicit_mesh, *_ = explicit.place_on_explicit_mesh(x, W, b)
    assert explicit_mesh.axis_types == (AxisType.Explicit,)
    assert capsys.readouterr().out.splitlines() == [
        "x: float32[32@x]",
        "W: float32[32@x,4]",
        "b: float32[4]",
    ]


def test_a_sharded_contraction_is_a_sharding_type_error(placed, capsys):
    _, x_exp, W_exp, b_exp, _ = placed
    capsys.readouterr()
    explicit.ambiguous(x_exp, W_exp, b_exp)
    assert capsys.readouterr().out.splitlines() == [
        "traced with float32[32@x] float32[32@x,4] float32[4]",
        "ShardingTypeError: Contracting dimensions are sharded and it is ambiguous how "
        "the output should be sharded. Please specify the output sharding via the "
        "`out_sharding` parameter. Got lhs_contracting_spec=('x',) and "
        "rhs_contracting_spec=('x',)",
    ]


def test_out_sharding_replicated_gives_one_all_reduce(placed, capsys):
    explicit_mesh, x_exp, W_exp, b_exp, reference = placed
    capsys.readouterr()
    explicit_out, explicit_compiled = explicit.run_explicit(
        explicit_mesh, x_exp, W_exp, b_exp, reference
    )
    np.testing.assert_allclose(explicit_out, reference, rtol=1e-6)
    assert explicit_out.sharding.is_fully_replicated
    assert explicit_out.sharding.mesh == explicit_mesh
    assert count_collectives(explicit_compiled) == {"all-reduce": 1}
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "x @ W: float32[4]"
    assert lines[2:] == [
        "matches NumPy: True",
        "output type: float32[4]",
        "all-reduce          1",
    ]
    # Replicated all the same, but spelled P(None,), where the Auto mesh gives P().
    assert explicit_out.sharding.spec == P(None)
