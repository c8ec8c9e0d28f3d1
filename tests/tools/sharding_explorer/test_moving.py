"""The page's account of moving an array under jit: a value inside the function is moved to
what out_shardings asks; an argument already on the mesh in another sharding is refused by
in_shardings, and one not yet placed is placed."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import P
from jax.sharding import AxisType, NamedSharding

from snippets.hlo import count_collectives


@pytest.fixture(scope="module")
def auto():
    return jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2)


def test_out_shardings_moves_the_value_with_collectives(auto):
    rows = jax.device_put(np.arange(32.0).reshape(8, 4), NamedSharding(auto, P("x")))
    target = NamedSharding(auto, P(None, "y"))
    move = jax.jit(lambda a: a, out_shardings=target)
    assert move(rows).sharding.is_equivalent_to(target, 2)
    assert count_collectives(move.lower(rows).compile())  # the compiler moved it


def test_an_argument_in_another_sharding_is_refused_not_moved(auto):
    rows = jax.device_put(np.arange(32.0).reshape(8, 4), NamedSharding(auto, P("x")))
    columns = jax.jit(lambda a: a, in_shardings=NamedSharding(auto, P(None, "y")))
    with pytest.raises(ValueError, match=re.escape("does not match the sharding")):
        columns(rows)
    # Never placed (NumPy, a fresh jnp array): placed as in_shardings says.
    for fresh in (np.arange(32.0).reshape(8, 4), jnp.arange(32.0).reshape(8, 4)):
        assert columns(fresh).sharding.spec == P(None, "y")
    # Placed on one device: refused too.
    on_one = jax.device_put(np.arange(32.0).reshape(8, 4), jax.devices()[0])
    with pytest.raises(ValueError, match=re.escape("does not match the sharding")):
        columns(on_one)


def test_the_snippet_names_its_axis_types():
    from pathlib import Path

    import snippets.tools.sharding_explorer.layout as module

    source = Path(module.__file__).read_text(encoding="utf-8")
    calls = re.findall(r"jax\.make_mesh\((.*?)\)\n", source, re.S)
    assert calls and all("axis_types=" in c for c in calls)
