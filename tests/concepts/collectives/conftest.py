"""Fixtures for the collectives page's tests: the shared meshes come from tests/conftest.py."""

import pytest

from snippets.concepts.collectives import diagram


@pytest.fixture
def data(line_mesh):
    """The page's `x` and `x8`."""
    return diagram.build_data(line_mesh)
