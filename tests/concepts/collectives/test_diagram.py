import re

import jax.numpy as jnp
import numpy as np
import pytest
from jax import P
from jax.sharding import NamedSharding

from snippets.concepts.collectives import diagram
from tests.concepts.collectives.cells import BLOCKS


def test_the_data_puts_the_device_number_in_the_tens_digit(line_mesh, capsys):
    x, x8 = diagram.build_data(line_mesh)
    np.testing.assert_array_equal(x, BLOCKS.ravel())
    np.testing.assert_array_equal(
        x8, (10 * np.arange(8.0)[:, None] + np.arange(8)).ravel()
    )
    assert (
        capsys.readouterr().out.splitlines()[0].startswith("float32[16] [ 0.  1. 10.")
    )


def test_per_device_returns_each_devices_block_and_result_as_rows(line_mesh, mesh):
    for on in (line_mesh, mesh):
        before, after = diagram.per_device(
            lambda b: b * 3, jnp.asarray(BLOCKS.ravel()), on
        )
        assert before.shape == after.shape == (8, 2)
        by_rows = NamedSharding(on, P(on.axis_names))
        assert before.sharding.is_equivalent_to(by_rows, 2)
        for shard in after.addressable_shards:
            d = shard.device.id  # on both meshes, device d holds block d
            np.testing.assert_array_equal(shard.data, [BLOCKS[d] * 3])


def test_per_device_needs_a_length_the_devices_divide(line_mesh):
    with pytest.raises(
        ValueError,
        match=re.escape(
            "per_device splits dimension 0 of x over all 8 devices, so it must be a "
            "multiple of 8; x has shape (12,)."
        ),
    ):
        diagram.per_device(lambda b: b, jnp.arange(12.0), line_mesh)
    with pytest.raises(ValueError, match=r"x has shape \(\)"):
        diagram.per_device(lambda b: b, jnp.array(1.0), line_mesh)
