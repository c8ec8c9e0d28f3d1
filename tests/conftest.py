"""Fixtures for the snippet tests. The root conftest.py has already given JAX 8 CPU devices."""

import jax
import pytest
from jax.sharding import AxisType


@pytest.fixture(scope="session")
def devices():
    found = jax.devices()
    assert len(found) == 8 and {d.platform for d in found} == {"cpu"}
    return found


@pytest.fixture(scope="session")
def mesh(devices):
    """The 2 x 4 mesh most examples use, with Explicit axes ("x", "y")."""
    return jax.make_mesh(
        (2, 4), ("x", "y"), axis_types=(AxisType.Explicit, AxisType.Explicit)
    )


@pytest.fixture(scope="session")
def line_mesh(devices):
    """All 8 devices on one Explicit axis "x"."""
    return jax.make_mesh((8,), ("x",), axis_types=(AxisType.Explicit,))
