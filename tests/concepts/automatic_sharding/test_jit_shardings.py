import jax
import numpy as np
from jax import P
from jax.sharding import NamedSharding

from snippets.concepts.automatic_sharding import jit_shardings
from snippets.hlo import count_collectives

X = np.arange(32.0).reshape(8, 4)


def test_a_replicated_output_is_gathered_over_both_axes(x, auto_mesh, compiled, capsys):
    capsys.readouterr()
    doubled = jit_shardings.replicated_output(x, auto_mesh)
    np.testing.assert_array_equal(doubled, 2 * X)
    assert doubled.is_fully_replicated
    assert {s.data.shape for s in doubled.addressable_shards} == {(8, 4)}
    assert [count_collectives(c) for c in compiled] == [{"all-gather": 2}]
    assert capsys.readouterr().out.splitlines() == [
        "output spec: P()",
        "all-gather          2",
        "each device holds (8, 4)",
    ]


def test_in_shardings_place_a_numpy_input(auto_mesh, compiled, capsys):
    host, grid, doubled = jit_shardings.place_with_in_shardings(auto_mesh)
    assert isinstance(host, np.ndarray)
    assert doubled.sharding == grid
    np.testing.assert_array_equal(doubled, 2 * X)
    assert {s.data.shape for s in doubled.addressable_shards} == {(4, 1)}
    assert [count_collectives(c) for c in compiled] == [{}]
    assert capsys.readouterr().out.splitlines() == [
        "output spec: P('x', 'y')",
        "collectives: none",
    ]


def test_a_committed_input_with_another_sharding_is_refused(auto_mesh, capsys):
    host, grid, _ = jit_shardings.place_with_in_shardings(auto_mesh)
    capsys.readouterr()
    fixed = jit_shardings.mismatched_input(host, grid, auto_mesh)
    assert fixed.sharding == grid
    np.testing.assert_array_equal(fixed, 2 * X)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(
        "ValueError: Sharding passed to jit does not match the sharding on the "
        "respective arg. Got jit sharding: NamedSharding("
    )
    assert "spec=P('x', 'y')" in lines[0]
    assert lines[1].startswith("arg sharding: NamedSharding(")
    assert lines[1].endswith(
        "spec=P('x', None), memory_kind=device) for arg type: float32[8,4]"
    )
    assert lines[2] == "after device_put: P('x', 'y')"


def test_without_in_shardings_jit_compiles_once_per_input_sharding(auto_mesh):
    # What the page says after the mismatch: leave in_shardings out and jit follows
    # the arguments, compiling one program per combination of shardings.
    double = jax.jit(lambda a: 2 * a)
    for spec, programs in [(P("x", "y"), 1), (P("x", None), 2), (P("x", "y"), 2)]:
        placed = jax.device_put(X, NamedSharding(auto_mesh, spec))
        assert double(placed).sharding.is_equivalent_to(placed.sharding, 2)
        assert double._cache_size() == programs
