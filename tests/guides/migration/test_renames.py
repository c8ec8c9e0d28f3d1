import importlib
import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import P
from jax.sharding import NamedSharding

from snippets.guides.migration import renames

PJIT_MESSAGE = (
    "jax.experimental.pjit.pjit has been deprecated. Please use `jax.jit` instead."
)


def test_tree_map_is_gone_and_its_siblings_too(capsys):
    params = renames.old_tree_map()
    assert capsys.readouterr().out == (
        "AttributeError: module 'jax' has no attribute 'tree_map'\n"
    )
    for name in ("tree_map", "tree_leaves", "tree_flatten", "tree_unflatten"):
        with pytest.raises(AttributeError):
            getattr(jax, name)
        assert hasattr(jax.tree, name.removeprefix("tree_"))
    assert jax.tree_util.tree_map(lambda a: a, params) is not None


def test_jax_tree_map_doubles_every_leaf(capsys):
    params = {"w": jnp.ones((2, 2)), "b": jnp.zeros(2)}
    doubled = renames.new_tree_map(params)
    np.testing.assert_array_equal(doubled["w"], 2 * np.ones((2, 2)))
    np.testing.assert_array_equal(doubled["b"], np.zeros(2))
    assert capsys.readouterr().out == (
        "{'b': [0.0, 0.0], 'w': [[2.0, 2.0], [2.0, 2.0]]}\n"
    )


def test_get_aval_is_gone_and_typeof_replaces_it(line_mesh, capsys):
    x = jax.device_put(jnp.arange(8.0), NamedSharding(line_mesh, P("x")))
    renames.old_get_aval(x)
    aval = renames.new_typeof(x)
    assert aval.shape == (8,) and aval.sharding.spec == P("x")
    assert capsys.readouterr().out.splitlines() == [
        "AttributeError: module 'jax.core' has no attribute 'get_aval'",
        "float32[8@x] (8,) P('x',)",
    ]
    with pytest.raises(AttributeError):
        jax.core.get_aval  # noqa: B018


def test_pjit_warns_and_jit_gives_the_same_values(capsys):
    importlib.import_module("jax.experimental.pjit").__getattr__.cache_clear()
    values = jnp.arange(8.0)
    plus_one_old, caught = renames.old_pjit(values)
    assert [(w.category, str(w.message)) for w in caught] == [
        (DeprecationWarning, PJIT_MESSAGE)
    ]
    plus_one = renames.new_jit(values)
    np.testing.assert_array_equal(plus_one_old, np.arange(8.0) + 1)
    np.testing.assert_array_equal(plus_one, plus_one_old)
    assert capsys.readouterr().out.startswith(f"DeprecationWarning: {PJIT_MESSAGE}\n")
    importlib.import_module("jax.experimental.pjit").__getattr__.cache_clear()
    with pytest.warns(DeprecationWarning, match="pjit has been deprecated"):
        from jax.experimental.pjit import pjit  # noqa: F401


def test_jit_takes_the_sharding_arguments_pjit_took():
    parameters = inspect.signature(jax.jit).parameters
    assert {"in_shardings", "out_shardings"} <= set(parameters)
