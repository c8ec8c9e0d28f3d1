"""The overlap page's `sharded_matmul`, plain and with XLA's collective matmul asked for,
on the 8 CPU devices: the product, and what the CPU compiler does with the option."""

import jax
import numpy as np
import pytest
from jax import P
from jax.sharding import NamedSharding

from docs_build.hlo import read
from snippets.advanced.overlap import xla_matmul as m


@pytest.fixture(scope="module")
def line():
    return jax.make_mesh((8,), ("x",))


def place(line, shape, spec, seed=0):
    values = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return jax.device_put(values, NamedSharding(line, spec))


def test_both_give_the_unsharded_product_with_its_columns_split(line):
    a = place(line, (64, 16), P("x", None))
    b = place(line, (16, 32), P(None, "x"), seed=1)
    expected = np.asarray(a) @ np.asarray(b)
    for matmul in (m.plain_matmul, m.xla_collective_matmul):
        product = matmul(a, b, line)
        np.testing.assert_allclose(product, expected, rtol=1e-5, atol=1e-5)
        assert product.sharding.spec == P(None, "x")
        assert product.addressable_shards[0].data.shape == (64, 4)


def test_the_page_block_prints_the_product_and_the_cpu_program(capsys):
    asked, plain = m.run_on_cpu()
    assert asked == plain  # the CPU compiler takes the GPU option's name and ignores it
    kinds = [c.kind for c in read(asked).collectives]
    assert kinds == ["all-gather"]
    assert capsys.readouterr().out.splitlines() == [
        "float32[64,32@x], equal to a @ b within 1e-05: True",
        "the CPU program is the one without the option: True",
        "all-gathers: 1, collective-permutes: 0",
    ]


def test_the_options_are_each_backends_own_name(line):
    """The jitted function carries the GPU option; the CPU compiler knows that name and
    refuses the TPU one, so an option for another backend is not silently dropped."""
    assert m.COLLECTIVE_MATMUL["gpu"] == {
        "xla_gpu_threshold_for_windowed_einsum_mib": 0
    }
    a = place(line, (64, 16), P("x", None))
    b = place(line, (16, 32), P(None, "x"))
    lowered = m.plain_matmul.lower(a, b, line)
    lowered.compile(compiler_options=m.COLLECTIVE_MATMUL["gpu"])
    with pytest.raises(Exception, match="No such compile option"):
        lowered.compile(compiler_options=m.COLLECTIVE_MATMUL["tpu"])


@pytest.mark.parametrize(
    "shapes,axes,message",
    [
        (((64, 16), (16, 32)), ("y",), "no"),
        (((64, 16), (8, 32)), ("x",), r"\(m, k\) and \(k, n\)"),
        (((60, 16), (16, 32)), ("x",), "multiples of 8"),
    ],
)
def test_a_product_that_does_not_fit_the_mesh_says_what_to_change(
    shapes, axes, message
):
    mesh = jax.make_mesh((8,), axes)
    x, w = (jax.ShapeDtypeStruct(s, np.float32) for s in shapes)
    with pytest.raises(ValueError, match=message):
        m.sharded_matmul(x, w, mesh)
