"""The manual control page's meshes and data, built once for its test modules."""

import pytest

from snippets.advanced.manual_control import collective_matmul, partial_manual, varying


@pytest.fixture(scope="package")
def grid_data(devices):
    """(mesh, x, w) of the partial-manual section: ("data", "model") = (2, 4), Auto."""
    return partial_manual.build_data()


@pytest.fixture(scope="package")
def line_data(devices):
    """(line, v, w) of the varying-types section: 8 devices on an Explicit axis "x"."""
    return varying.build_line()


@pytest.fixture(scope="package")
def operands(line_data):
    """(a, b) of the collective matmul."""
    return collective_matmul.build_operands(line_data[0])
