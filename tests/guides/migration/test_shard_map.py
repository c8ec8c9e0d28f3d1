import importlib
import inspect
import warnings

import jax
import numpy as np
import pytest
from jax import P
from jax.sharding import AxisType

from snippets.guides.migration import shard_map

DOUBLED = 2 * np.arange(8.0)
EXPERIMENTAL_MESSAGE = (
    "jax.experimental.shard_map is deprecated in v0.8.0. Used jax.shard_map instead."
)


def forget_warned_names(module_name: str) -> None:
    """JAX warns about a deprecated attribute only on a process's first lookup of it."""
    importlib.import_module(module_name).__getattr__.cache_clear()


@pytest.fixture
def data(devices):
    return shard_map.build_data()


def test_data_starts_on_one_device_and_is_then_split(devices, capsys):
    mesh, values, x = shard_map.build_data()
    assert mesh.axis_types == (AxisType.Explicit,)
    assert values.sharding.device_set == {jax.devices()[0]}
    assert x.sharding.spec == P("x")
    np.testing.assert_array_equal(x, np.arange(8.0))
    assert capsys.readouterr().out == "values: float32[8]  x: float32[8@x]\n"


def test_experimental_shard_map_warns_and_still_runs(data, capsys):
    _, values, _ = data
    forget_warned_names("jax.experimental.shard_map")
    old_mesh, doubled_old, caught = shard_map.old_shard_map(values)
    assert [(w.category, str(w.message)) for w in caught] == [
        (DeprecationWarning, EXPERIMENTAL_MESSAGE)
    ]
    assert old_mesh.axis_types == (AxisType.Auto,)
    np.testing.assert_array_equal(doubled_old, DOUBLED)
    assert capsys.readouterr().out.splitlines()[0] == (
        f"DeprecationWarning: {EXPERIMENTAL_MESSAGE}"
    )


def test_experimental_shard_map_warns_only_on_the_first_lookup():
    forget_warned_names("jax.experimental.shard_map")
    with pytest.warns(DeprecationWarning, match="deprecated in v0.8.0"):
        from jax.experimental.shard_map import shard_map as first  # noqa: F401
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from jax.experimental.shard_map import shard_map as second  # noqa: F401
    assert caught == []


def test_jax_shard_map_gives_the_same_values(data, capsys):
    mesh, _, x = data
    doubled = shard_map.new_shard_map(mesh, x)
    np.testing.assert_array_equal(doubled, DOUBLED)
    assert doubled.sharding.spec == P("x")
    assert capsys.readouterr().out.splitlines()[-1] == "float32[8@x]"


def test_shard_map_takes_its_mesh_from_set_mesh_and_checks_vma_by_default(data):
    mesh, _, x = data
    with jax.set_mesh(mesh):
        doubled = jax.shard_map(lambda b: 2 * b, in_specs=P("x"), out_specs=P("x"))(x)
    np.testing.assert_array_equal(doubled, DOUBLED)
    assert inspect.signature(jax.shard_map).parameters["check_vma"].default is True


def test_the_unsplit_array_is_refused_on_an_explicit_mesh(data):
    mesh, values, _ = data
    with pytest.raises(ValueError, match=r"in_specs passed to shard_map: P\('x',\)"):
        jax.shard_map(lambda b: b, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(values)


def test_check_rep_and_a_positional_mesh_are_type_errors(data, capsys):
    mesh, _, x = data
    unchecked = shard_map.check_rep(mesh, x)
    np.testing.assert_array_equal(unchecked, DOUBLED)
    lines = capsys.readouterr().out.splitlines()
    # Python 3.13 adds ". Did you mean 'check_vma'?"; 3.12 stops after the name.
    assert lines[0].removesuffix(". Did you mean 'check_vma'?") == (
        "TypeError: shard_map() got an unexpected keyword argument 'check_rep'"
    )
    assert lines[1].startswith(
        "TypeError: shard_map() takes from 0 to 1 positional arguments but 2"
    )
    with pytest.raises(TypeError, match="check_rep"):
        jax.shard_map(
            lambda b: b, mesh=mesh, in_specs=P("x"), out_specs=P("x"), check_rep=True
        )


def test_pvary_is_gone(capsys):
    shard_map.pvary_removed()
    assert capsys.readouterr().out == (
        "AttributeError: module 'jax.lax' has no attribute 'pvary'\n"
    )
    with pytest.raises(AttributeError):
        jax.lax.pvary  # noqa: B018


def test_pcast_makes_the_loop_start_vary(data, capsys):
    mesh, _, x = data
    tripled = shard_map.pcast_varying(mesh, x)
    np.testing.assert_array_equal(tripled, 3 * np.arange(8.0))
    assert capsys.readouterr().out.splitlines()[:2] == [
        "zeros:       float32[1]",
        "after pcast: float32[1]{V:x}",
    ]


def test_pmap_still_runs_silently_and_returns_a_named_sharding(data, capsys):
    _, values, _ = data
    summed_old, caught = shard_map.old_pmap(values)
    assert caught == []
    np.testing.assert_array_equal(summed_old, np.full(8, 28.0))
    assert isinstance(summed_old.sharding, jax.sharding.NamedSharding)
    assert capsys.readouterr().out.splitlines()[0] == "warnings: 0"
    assert "Use :py:func:`jax.shard_map` instead" in jax.pmap.__doc__


def test_shard_map_and_jit_give_what_pmap_gave(data, capsys):
    mesh, values, x = data
    summed_old, _ = shard_map.old_pmap(values)
    summed, total = shard_map.new_pmap(mesh, x)
    np.testing.assert_array_equal(summed, summed_old)
    assert summed.sharding.spec == P("x")
    assert float(total) == np.arange(8.0).sum()
    assert capsys.readouterr().out.splitlines()[-1] == "28.0 float32[]"


def test_pmap_drops_the_mapped_axis_and_shard_map_keeps_it(data):
    mesh, values, x = data
    seen = {}

    def record(name):
        def body(v):
            seen[name] = v.shape
            return v

        return body

    jax.pmap(record("pmap"))(values)
    jax.shard_map(record("shard_map"), mesh=mesh, in_specs=P("x"), out_specs=P("x"))(x)
    assert seen == {"pmap": (), "shard_map": (1,)}
