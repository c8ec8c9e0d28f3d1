import re

import jax
import numpy as np
import pytest
from jax import P
from jax.sharding import NamedSharding

from snippets.concepts.automatic_sharding import constraints
from snippets.hlo import count_collectives, read_collectives

X = np.arange(32.0).reshape(8, 4)


def test_without_a_constraint_the_row_sums_are_all_reduced(x, compiled, capsys):
    capsys.readouterr()
    shares = constraints.without_constraint(x)
    np.testing.assert_allclose(shares, X / X.sum(axis=1, keepdims=True), rtol=1e-6)
    assert shares.sharding.spec == P("x", "y")
    assert [count_collectives(c) for c in compiled] == [{"all-reduce": 1}]


def test_the_constraint_gathers_whole_rows_instead(x, auto_mesh, compiled, capsys):
    capsys.readouterr()
    shares = constraints.with_constraint(x, auto_mesh)
    np.testing.assert_allclose(shares, X / X.sum(axis=1, keepdims=True), rtol=1e-6)
    assert shares.sharding.spec == P("x")
    assert {s.data.shape for s in shares.addressable_shards} == {(4, 4)}
    assert [count_collectives(c) for c in compiled] == [{"all-gather": 1}]
    assert capsys.readouterr().out.splitlines() == [
        "output spec: P('x',)",
        "all-gather          1",
    ]


def test_resharding_costs_per_target(x, capsys):
    capsys.readouterr()
    costs = constraints.resharding_table(x)
    assert costs == {
        P("x", "y"): {},
        P("x", None): {"all-gather": 1},
        P(None, "y"): {"all-gather": 1},
        P(("x", "y"), None): {"all-to-all": 1},
        P("y", "x"): {"all-to-all": 1, "collective-permute": 1},
        P(): {"all-gather": 2},
    }
    table = [re.split(r"\s{2,}", line) for line in capsys.readouterr().out.splitlines()]
    assert table == [
        ["x is float32[8,4] with spec P('x', 'y')"],
        [""],
        ["moved to", "collectives"],
        ["P('x', 'y')", "none"],
        ["P('x', None)", "1 all-gather"],
        ["P(None, 'y')", "1 all-gather"],
        ["P(('x', 'y'), None)", "1 all-to-all"],
        ["P('y', 'x')", "1 all-to-all, 1 collective-permute"],
        ["P()", "2 all-gather"],
    ]


def test_each_move_keeps_the_values(x, auto_mesh):
    for spec in [P("x", None), P(("x", "y"), None), P("y", "x"), P()]:
        target = NamedSharding(auto_mesh, spec)
        moved = jax.jit(lambda a, t=target: jax.lax.with_sharding_constraint(a, t))(x)
        assert moved.sharding.is_equivalent_to(target, 2)
        np.testing.assert_array_equal(moved, X)


@pytest.mark.parametrize(
    ("targets", "message"),
    [
        (
            [P(None, ("x", "y"))],
            r"implies that array axis 1 is partitioned 8 times, but the dimension "
            r"size is 4",
        ),
        ([P("x", "y", None)], r"at most 2 entries, got P\('x', 'y', None\)"),
        ([("x", "y")], r"must be a P\(...\).*got \('x', 'y'\)"),
        ([P("z")], r"Resource axis: z of P\('z',\) is not found in mesh"),
    ],
)
def test_resharding_costs_says_what_to_change(x, targets, message):
    with pytest.raises(ValueError, match=message):
        constraints.resharding_costs(x, targets)


def test_resharding_costs_needs_a_placed_array_on_auto_axes(mesh):
    with pytest.raises(ValueError, match=r"x must be placed on a mesh with Auto axes"):
        constraints.resharding_costs(np.zeros((8, 4)), [P()])
    explicit = jax.device_put(np.zeros((8, 4)), NamedSharding(mesh, P("x")))
    with pytest.raises(
        ValueError, match=r"On Explicit axes, move arrays with jax\.reshard"
    ):
        constraints.resharding_costs(explicit, [P()])


def test_device_put_inside_jit_moves_nothing_on_auto_axes(
    x, auto_mesh, compiled, capsys
):
    capsys.readouterr()
    moved = constraints.device_put_inside_jit(x, auto_mesh)
    np.testing.assert_array_equal(moved, X)
    assert moved.sharding.spec == P("x", "y")
    assert [count_collectives(c) for c in compiled] == [{}]


def test_device_put_inside_jit_does_move_on_explicit_axes(mesh):
    # The contrast the page draws: on Explicit axes the same call is a reshard.
    x = jax.device_put(X, NamedSharding(mesh, P("x", "y")))
    move = jax.jit(lambda a: jax.device_put(a, NamedSharding(mesh, P("x", None))))
    assert move(x).sharding.spec == P("x", None)
    assert count_collectives(move.lower(x).compile()) == {"all-gather": 1}


def test_reshard_refuses_auto_axes(x, auto_mesh, capsys):
    capsys.readouterr()
    constraints.reshard_on_auto_axes(x, auto_mesh)
    assert capsys.readouterr().out.startswith(
        "ValueError: PartitionSpec passed to reshard cannot contain axis names that "
        "are of type Auto or Manual. Got PartitionSpec: P('x', None) with axis "
        "name: x of type: AxisType.Auto."
    )


def test_spmd_axis_name_splits_the_batch_dimension_of_a_constraint(capsys):
    from snippets.concepts.automatic_sharding import propagation

    mesh = propagation.build_mesh()
    capsys.readouterr()
    specs = constraints.vmapped_constraint(mesh)
    assert specs == {None: P(None, "y"), "x": P("x", "y")}
    assert capsys.readouterr().out.splitlines() == [
        "spmd_axis_name=None: P(None, 'y')",
        "spmd_axis_name='x': P('x', 'y')",
    ]


def test_unconstrained_leaves_the_columns_where_they_were(
    x, auto_mesh, compiled, capsys
):
    capsys.readouterr()
    both_whole, columns_free = constraints.unconstrained(x, auto_mesh)
    for totals in (both_whole, columns_free):
        np.testing.assert_array_equal(totals, np.cumsum(X, axis=0))
    assert both_whole.sharding.is_equivalent_to(NamedSharding(auto_mesh, P()), 2)
    assert columns_free.sharding.spec == P(None, "y")
    assert {s.data.shape for s in columns_free.addressable_shards} == {(8, 1)}
    # P(None, None) gathers along x (groups of 2) and along y (groups of 4); the open
    # dimension gathers along x only.
    sizes = [sorted(c.group_size for c in read_collectives(p)) for p in compiled]
    assert sizes == [[2, 4], [2]]
    assert all(c.kind == "all-gather" for p in compiled for c in read_collectives(p))
    assert capsys.readouterr().out.splitlines() == [
        "output spec: P()",
        "all-gather          2",
        "output spec: P(None, 'y')",
        "all-gather          1",
    ]


def test_unconstrained_is_an_open_dimension_in_the_lowered_program(x, auto_mesh):
    lowered = jax.jit(constraints.running_totals(auto_mesh, P(None, P.UNCONSTRAINED)))
    text = lowered.lower(x).as_text()
    # `{?}`: an open dimension, which propagation may fill; `{}`: whole
    assert re.search(r"sdy\.sharding_constraint %\w+ <@mesh, \[\{\}, \{\?\}\]>", text)


def test_out_shardings_refuse_unconstrained(x, auto_mesh, capsys):
    capsys.readouterr()
    constraints.unconstrained_out_shardings(x, auto_mesh)
    assert capsys.readouterr().out.startswith(
        "ValueError: Unconstrained dims are not allowed when passed to out_shardings"
    )


def test_explicit_axes_refuse_unconstrained(mesh):
    explicit = jax.device_put(np.zeros((8, 4)), NamedSharding(mesh, P("x")))
    message = r"cannot contain `P.UNCONSTRAINED` when no mesh axis_types are `Auto`"
    with pytest.raises(ValueError, match=message):
        NamedSharding(mesh, P("x", P.UNCONSTRAINED))
    with jax.set_mesh(mesh):  # a bare spec, looked up in the mesh in context
        for move in (jax.lax.with_sharding_constraint, jax.reshard):
            with pytest.raises(ValueError, match=message):
                jax.jit(lambda a, m=move: m(a, P("x", P.UNCONSTRAINED)))(explicit)
    with pytest.raises(ValueError, match=r"needs Auto axes"):
        constraints.running_totals(mesh, P(None, P.UNCONSTRAINED))


@pytest.mark.parametrize("spec", [P("x", None), P(None), ("None", None), P()])
def test_running_totals_needs_dimension_0_whole(auto_mesh, spec):
    with pytest.raises(ValueError, match=r"spec must be P\(None, \.\.\.\)"):
        constraints.running_totals(auto_mesh, spec)
