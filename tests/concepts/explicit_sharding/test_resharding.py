import jax
import jax.numpy as jnp
import numpy as np
from jax import P
from jax.sharding import AxisType, NamedSharding

from snippets.concepts.explicit_sharding import resharding
from snippets.hlo import count_collectives

X = np.arange(32.0).reshape(8, 4)


def test_reshard_outside_jit_returns_a_new_array(x, explicit_mesh, capsys):
    capsys.readouterr()
    gathered = resharding.outside_jit(x, explicit_mesh)
    np.testing.assert_array_equal(gathered, X)
    assert gathered.sharding.spec == P("x", None)
    assert x.sharding.spec == P("x", "y")  # x itself is unchanged
    assert capsys.readouterr().out.splitlines() == [
        "float32[8@x,4@y] each device holds (4, 1)",
        "float32[8@x,4] each device holds (4, 4)",
    ]


def test_reshard_to_whole_rows_is_one_all_gather(x, explicit_mesh):
    # The eager reshard above runs this program.
    move = jax.jit(lambda a: jax.reshard(a, P("x", None)))
    with jax.set_mesh(explicit_mesh):
        assert count_collectives(move.lower(x).compile()) == {"all-gather": 1}


def test_operands_split_in_different_orders_do_not_add(x, explicit_mesh, capsys):
    capsys.readouterr()
    swapped = resharding.disagreeing_operands(x, explicit_mesh)
    np.testing.assert_array_equal(swapped, X)
    assert capsys.readouterr().out.splitlines() == [
        "x: float32[8@x,4@y]  swapped: float32[8@y,4@x]",
        "ShardingTypeError: add got incompatible shardings for broadcasting: "
        "('x', 'y'), ('y', 'x').",
    ]


def test_reshard_inside_jit_is_an_all_to_all_and_a_permute(
    x, explicit_mesh, compiled, capsys
):
    swapped = resharding.disagreeing_operands(x, explicit_mesh)
    capsys.readouterr()
    total = resharding.reshard_inside_jit(x, swapped)
    np.testing.assert_array_equal(total, 2 * X)
    assert str(jax.typeof(total)) == "float32[8@x,4@y]"
    assert [count_collectives(c) for c in compiled] == [
        {"all-to-all": 1, "collective-permute": 1}
    ]
    assert capsys.readouterr().out.splitlines() == [
        "float32[8@x,4@y], float32[8@y,4@x] -> float32[8@x,4@y]",
        "all-to-all          1",
        "collective-permute  1",
    ]


def test_on_auto_axes_the_compiler_reshards_silently():
    # The comparison table: the same addition on Auto axes compiles, and the
    # compiler adds the move itself.
    auto = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    a = jax.device_put(X, NamedSharding(auto, P("x", "y")))
    b = jax.device_put(X, NamedSharding(auto, P("y", "x")))
    add = jax.jit(jnp.add)
    np.testing.assert_array_equal(add(a, b), 2 * X)
    assert count_collectives(add.lower(a, b).compile())


def test_device_put_in_jit_on_explicit_axes_matches_reshard(x, explicit_mesh):
    """The page says what old code's `device_put` inside `jit` does on Explicit axes: the same
    type, collectives and gradient as `jax.reshard`. A JAX release that changes it fails here."""
    swapped = NamedSharding(explicit_mesh, P("y", "x"))
    weights = jnp.arange(4.0)

    def by_device_put(a):
        return jax.device_put(a, swapped)

    def by_reshard(a):
        return jax.reshard(a, P("y", "x"))

    with jax.set_mesh(explicit_mesh):
        programs = [jax.jit(f).lower(x).compile() for f in (by_device_put, by_reshard)]
        types = [jax.typeof(jax.jit(f)(x)) for f in (by_device_put, by_reshard)]
        grads = [
            jax.jit(jax.grad(lambda a, f=f: (f(a) * weights).sum()))(x)
            for f in (by_device_put, by_reshard)
        ]
    assert str(types[0]) == str(types[1]) == "float32[8@y,4@x]"
    assert count_collectives(programs[0]) == count_collectives(programs[1])
    np.testing.assert_array_equal(grads[0], grads[1])
    assert grads[0].sharding.spec == x.sharding.spec
