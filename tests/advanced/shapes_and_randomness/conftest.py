"""The page's meshes, data and data file, built once for its test modules."""

import contextlib
import io

import pytest

from snippets.advanced.shapes_and_randomness import loading, uneven


def quietly(function, *args):
    """Call `function` without letting it print; return its result."""
    with contextlib.redirect_stdout(io.StringIO()):
        return function(*args)


@pytest.fixture(scope="package")
def meshes(devices):
    """(mesh, auto_mesh): the page's Explicit and Auto meshes of 8 devices."""
    return uneven.build_meshes()


@pytest.fixture(scope="package")
def page_mesh(meshes):
    """The page's `mesh`: 8 devices on one Explicit axis "x"."""
    return meshes[0]


@pytest.fixture(scope="package")
def auto_mesh(meshes):
    return meshes[1]


@pytest.fixture(scope="package")
def data():
    """(batch, targets, weights): 10 examples, for a layer 32 -> 64."""
    return uneven.build_data()


@pytest.fixture(scope="package")
def dataset():
    """The page's 40-row file, opened as a memmap; removed after the tests."""
    path, rows = quietly(loading.write_dataset)
    yield rows
    del rows
    path.unlink()
    path.parent.rmdir()
