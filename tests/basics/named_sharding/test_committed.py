import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import P
from jax.sharding import NamedSharding

from snippets.basics.named_sharding import committed, place_arrays

X = np.arange(32.0).reshape(8, 4)


@pytest.fixture
def placed():
    mesh_8, _, _ = place_arrays.build_meshes()
    x = place_arrays.unplaced_array()
    _, x_rows = place_arrays.put_on_mesh(x, mesh_8)
    return x, x_rows


def table(out: str) -> list[str]:
    return [" ".join(line.split()) for line in out.splitlines()]


def test_device_put_commits_only_when_it_names_a_place(placed, devices, capsys):
    x, x_rows = placed
    capsys.readouterr()
    on_3, flags = committed.committed_or_not(x, x_rows)
    assert flags == {
        "x (from jnp)": False,
        "device_put(x)": False,
        "device_put(x, device 3)": True,
        "device_put(on_3)": True,
        "x_rows": True,
    }
    assert on_3.devices() == {devices[3]}
    assert jax.device_put(on_3).devices() == {devices[3]}
    assert table(capsys.readouterr().out) == [
        "x (from jnp) committed=False devices=[0]",
        "device_put(x) committed=False devices=[0]",
        "device_put(x, device 3) committed=True devices=[3]",
        "device_put(on_3) committed=True devices=[3]",
        "x_rows committed=True devices=[0, 1, 2, 3, 4, 5, 6, 7]",
    ]


def test_jit_runs_where_the_committed_argument_is(placed, devices, capsys):
    x, x_rows = placed
    on_3, _ = committed.committed_or_not(x, x_rows)
    capsys.readouterr()
    with_on_3, with_rows = committed.when_they_meet(x, on_3, x_rows)
    assert with_on_3.devices() == {devices[3]} and with_on_3.committed
    assert with_rows.sharding.is_equivalent_to(x_rows.sharding, 2)
    assert with_rows.committed
    np.testing.assert_array_equal(with_on_3, 2 * X)
    np.testing.assert_array_equal(with_rows, 2 * X)
    assert x.devices() == {devices[0]} and not x.committed  # x itself did not move
    assert capsys.readouterr().out.splitlines()[-1] == (
        "x + x_rows is split as P('x', None)"
    )


def test_two_uncommitted_arrays_stay_uncommitted(placed, devices):
    x, _ = placed
    out = jax.jit(jnp.add)(x, jax.device_put(x))
    assert out.devices() == {devices[0]} and not out.committed


def test_committed_arguments_that_disagree_are_refused(placed, devices):
    x, x_rows = placed
    on_3 = jax.device_put(x, devices[3])
    with pytest.raises(ValueError, match="Received incompatible devices for jitted"):
        jax.jit(jnp.add)(on_3, x_rows)
    in_rows = jax.jit(lambda a: 2 * a, in_shardings=x_rows.sharding)
    placed_x = in_rows(x)  # uncommitted: placed as in_shardings asks
    assert placed_x.sharding.is_equivalent_to(x_rows.sharding, 2)
    with pytest.raises(ValueError, match="Sharding passed to jit does not match"):
        in_rows(on_3)


def test_show_placement_refuses_what_is_not_on_a_device(placed):
    x, _ = placed
    with pytest.raises(TypeError, match=r"host is a ndarray, not a jax.Array"):
        committed.show_placement({"x": x, "host": X})
    mesh_8 = place_arrays.build_meshes()[0]
    spread = jax.device_put(X, NamedSharding(mesh_8, P("x")))
    assert committed.show_placement({"spread": spread}) == {"spread": True}
