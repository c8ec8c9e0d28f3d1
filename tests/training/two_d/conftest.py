"""The 2-D page's expensive objects, built once for all its test modules."""

import pytest

from snippets.training.two_d import communication, placement
from tests.training.two_d.printed import quietly


@pytest.fixture(scope="package")
def meshes(devices):
    return quietly(placement.build_meshes)[0]


@pytest.fixture(scope="package")
def placed(meshes):
    """(column_row, mesh, model, x, y) on the 2 x 4 mesh, and the printout."""
    return quietly(placement.place_on_2x4, meshes)


@pytest.fixture(scope="package")
def column_row(placed):
    return placed[0][0]


@pytest.fixture(scope="package")
def runs(column_row, meshes):
    """A compiled training step per mesh shape, batch 64, and the printout."""
    return quietly(communication.prepare_all, column_row, meshes)
