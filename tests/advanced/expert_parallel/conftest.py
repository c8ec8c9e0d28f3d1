"""The expert parallelism page's mesh, parameters and tokens, built once."""

import contextlib
import io

import pytest

from snippets.advanced.expert_parallel import layer


def quietly(function, *args):
    """Call `function`, returning its result and what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = function(*args)
    return result, out.getvalue()


@pytest.fixture(scope="package")
def expert_mesh(devices):
    return quietly(layer.expert_mesh)[0]


@pytest.fixture(scope="package")
def built(expert_mesh):
    """(params placed on the mesh, tokens on one device, x: the tokens split)."""
    return quietly(layer.build, expert_mesh)


@pytest.fixture(scope="package")
def params(built):
    return built[0][0]


@pytest.fixture(scope="package")
def tokens(built):
    return built[0][1]


@pytest.fixture(scope="package")
def x(built):
    return built[0][2]
