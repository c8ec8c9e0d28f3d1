"""The tensor parallelism page's mesh and placed MLP, built once for its test modules."""

import pytest

from snippets.training.tensor_parallel import column_row
from tests.training.tensor_parallel.printed import quietly


@pytest.fixture(scope="package")
def model_mesh(devices):
    return quietly(column_row.model_mesh)[0]


@pytest.fixture(scope="package")
def placed(model_mesh):
    """(column_row specs, model) with the MLP split columns then rows."""
    return quietly(column_row.place_mlp, model_mesh)[0]


@pytest.fixture(scope="package")
def hidden(placed, model_mesh):
    """(x, compiled first layer, hidden activation)."""
    return quietly(column_row.hidden_stays_split, placed[1], model_mesh)[0]
