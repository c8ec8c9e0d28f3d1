import inspect
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import P
from jax.sharding import NamedSharding

from snippets.advanced.shapes_and_randomness import randomness
from snippets.hlo import count_collectives
from tests.advanced.shapes_and_randomness.conftest import quietly

PAGE = (
    Path(__file__).resolve().parents[3]
    / "docs"
    / "advanced"
    / "shapes-and-randomness.md"
)


@pytest.fixture(scope="module")
def sampled(page_mesh):
    """(key, noise_rows, noise, compiled) from the page's sharded sampling block."""
    return quietly(randomness.sample_on_mesh, page_mesh)


@pytest.fixture(scope="module")
def keys():
    """(key, init_key, dropout_key)."""
    return quietly(randomness.typed_keys)


def test_each_device_makes_its_own_block_with_no_communication(sampled, page_mesh):
    key, _, noise, compiled = sampled
    assert str(jax.typeof(noise)) == "float32[16@x,8]"
    assert {s.data.shape for s in noise.addressable_shards} == {(2, 8)}
    assert count_collectives(compiled) == {}
    # The only random bits a device's program makes are its own block's.
    assert set(re.findall(r"u32\[\d+,\d+\]", compiled.as_text())) == {"u32[2,8]"}
    np.testing.assert_allclose(noise, jax.random.normal(key, (16, 8)), atol=1e-6)


def test_the_page_prints_the_flag_and_the_sharded_sample(page_mesh, capsys):
    randomness.sample_on_mesh(page_mesh)
    assert jax.config.jax_threefry_partitionable is True  # the default: nothing set it
    assert capsys.readouterr().out == (
        "jax_threefry_partitionable: True\n"
        "float32[16@x,8]  each device: (2, 8)\n"
        "collectives: none\n"
    )


def test_most_samplers_take_an_out_sharding():
    """The prose: normal and most other samplers take `out_sharding`."""
    samplers = [
        getattr(jax.random, name)
        for name in dir(jax.random)
        if inspect.isfunction(getattr(jax.random, name)) and not name.startswith("_")
    ]
    takes = {
        f.__name__
        for f in samplers
        if "out_sharding" in inspect.signature(f).parameters
    }
    assert {"normal", "uniform", "bits", "bernoulli", "randint", "categorical"} <= takes
    assert "choice" not in takes  # hence "most"
    assert "`jax.random.normal` and most other samplers take" in " ".join(
        PAGE.read_text().split()
    )


def test_with_the_flag_off_the_program_communicates_and_the_numbers_change(
    sampled, page_mesh, capsys
):
    key, noise_rows, noise, _ = sampled
    compiled_off, noise_off = randomness.flag_off(page_mesh, key, noise_rows, noise)
    assert jax.config.jax_threefry_partitionable is True  # restored after the block
    counts = count_collectives(compiled_off)
    assert counts.get("all-gather", 0) >= 1
    assert not np.allclose(noise_off, noise)
    with jax.threefry_partitionable(False):
        np.testing.assert_allclose(
            noise_off, jax.random.normal(key, (16, 8)), atol=1e-6
        )
    lines = capsys.readouterr().out.splitlines()
    assert lines[-2].startswith("first numbers, flag on:  [ 1.623 ")
    assert lines[-1].startswith("first numbers, flag off: [-1.304 ")


def test_bits_are_identical_on_every_mesh_and_normals_agree(sampled, capsys):
    key = sampled[0]
    sample, layouts, bits, normal = randomness.same_on_every_mesh(key)
    np.testing.assert_array_equal(bits, jax.random.bits(key, (16, 8)))
    np.testing.assert_array_equal(normal, jax.random.normal(key, (16, 8)))
    assert layouts == {
        (1,): P("x"),
        (2,): P("x"),
        (4,): P(None, "x"),
        (8,): P("x"),
        (2, 4): P("x", "y"),
    }
    for sizes, spec in layouts.items():
        devices = jax.devices()[: int(np.prod(sizes))]
        layout_mesh = jax.make_mesh(sizes, ("x", "y")[: len(sizes)], devices=devices)
        sharding = NamedSharding(layout_mesh, spec)
        compiled = jax.jit(sample, out_shardings=sharding).lower(key).compile()
        assert count_collectives(compiled) == {}  # each device makes its own block
        b, g = compiled(key)
        assert {s.data.shape for s in b.addressable_shards} == {
            sharding.shard_shape((16, 8))
        }
        np.testing.assert_array_equal(b, bits)
        np.testing.assert_allclose(g, normal, rtol=0, atol=1e-6)
    rows = [line.split("  ") for line in capsys.readouterr().out.splitlines()[1:]]
    rows = [[cell.strip() for cell in row if cell.strip()] for row in rows]
    assert rows == [
        ["{'x': 1}", "P('x',)", "(16, 8)", "True", "True"],
        ["{'x': 2}", "P('x',)", "(8, 8)", "True", "True"],
        ["{'x': 4}", "P(None, 'x')", "(16, 2)", "True", "True"],
        ["{'x': 8}", "P('x',)", "(2, 8)", "True", "True"],
        ["{'x': 2, 'y': 4}", "P('x', 'y')", "(8, 2)", "True", "True"],
    ]


def test_typed_keys_and_their_types(capsys):
    key, init_key, dropout_key = randomness.typed_keys()
    assert capsys.readouterr().out == (
        "key:      key<fry>[]\n"
        "split:    key<fry>[] key<fry>[]\n"
        "raw data: [0 0]\n"
        "old style: uint32[2]\n"
    )
    assert jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key)
    assert not np.array_equal(
        jax.random.key_data(init_key), jax.random.key_data(dropout_key)
    )


def test_one_key_per_example_split_like_the_batch(page_mesh, keys, capsys):
    dropout_key = keys[2]
    example_keys = randomness.keys_per_example(page_mesh, dropout_key)
    assert capsys.readouterr().out == "key<fry>[16@x]\neach device: key<fry>[2]\n"
    np.testing.assert_array_equal(
        jax.random.key_data(example_keys),
        jax.random.key_data(jax.random.split(dropout_key, 16)),
    )


def test_dropout_is_local_and_the_same_on_any_mesh(page_mesh, mesh, keys, capsys):
    dropout_key = keys[2]
    example_keys = quietly(randomness.keys_per_example, page_mesh, dropout_key)
    activations, dropped, unsharded = randomness.dropout_on_mesh(
        page_mesh, example_keys, dropout_key
    )
    assert str(jax.typeof(dropped)) == "float32[16@x,4]"
    assert (
        count_collectives(
            randomness.dropout.lower(example_keys, activations, rate=0.5).compile()
        )
        == {}
    )
    np.testing.assert_array_equal(dropped, unsharded)
    assert set(np.unique(np.asarray(dropped)).tolist()) == {0.0, 2.0}
    # On the 2 x 4 mesh, with rows split over both axes: the same zeros.
    both = NamedSharding(mesh, P(("x", "y")))
    on_grid = randomness.dropout(
        jax.device_put(jax.random.split(dropout_key, 16), both),
        jax.device_put(jnp.ones((16, 4)), both),
        rate=0.5,
    )
    np.testing.assert_array_equal(on_grid, unsharded)
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["collectives: none", "float32[16@x,4]"]
    assert lines[-1] == "same as on one device: True"


def test_dropout_checks_its_arguments(keys):
    example_keys = jax.random.split(keys[2], 4)
    with pytest.raises(
        ValueError, match=r"rate must be at least 0 and below 1, got 1\.0"
    ):
        randomness.dropout(example_keys, jnp.ones((4, 2)), rate=1.0)
    with pytest.raises(ValueError, match=r"got -0\.1"):
        randomness.dropout(example_keys, jnp.ones((4, 2)), rate=-0.1)
    with pytest.raises(ValueError, match="need one key per row: 4 keys for 5 rows"):
        randomness.dropout(example_keys, jnp.ones((5, 2)), rate=0.5)
