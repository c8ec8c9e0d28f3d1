"""The FSDP page's model, optimizer and data, built once for all its test modules."""

import pytest

from snippets.training.fsdp import memory, placement, step
from tests.training.fsdp.printed import quietly


@pytest.fixture(scope="package")
def data_mesh(devices):
    return placement.data_mesh()


@pytest.fixture(scope="package")
def placed(data_mesh):
    """(specs, model, optimizer) and the printout."""
    return quietly(placement.place_fsdp, data_mesh)


@pytest.fixture(scope="package")
def replicated(data_mesh):
    return memory.replicated_baseline(data_mesh)


@pytest.fixture(scope="package")
def data(data_mesh):
    return quietly(step.sharded_data, data_mesh)
