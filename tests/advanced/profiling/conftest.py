"""The profiling page's program, its traces and its timings, made once for its test modules:
each trace is a few hundred milliseconds, each timing fifty calls."""

import tempfile

import pytest

from snippets.advanced.profiling import program, slower, trace
from tests.advanced.profiling.printed import quietly


@pytest.fixture(scope="package", autouse=True)
def traces_under_pytests_own_tmp(tmp_path_factory):
    """The page writes each trace to a new `tempfile.mkdtemp()`, for the reader to open; the
    tests' traces go under pytest's temporary directory, which pytest clears."""
    saved = tempfile.tempdir
    tempfile.tempdir = str(tmp_path_factory.mktemp("traces"))
    yield
    tempfile.tempdir = saved


@pytest.fixture(scope="package")
def mesh(devices):
    return quietly(program.line_mesh)[0]


@pytest.fixture(scope="package")
def split(mesh):
    """(x, w1, w2) with the weights split like the batch, and what the page printed."""
    return quietly(program.split_weights, mesh)


@pytest.fixture(scope="package")
def forward(split):
    """(log_dir, events, spans) of the traced forward pass with split weights, and the print."""
    return quietly(trace.trace_forward, *split[0])


@pytest.fixture(scope="package")
def fixed(mesh, split):
    """((x, w1, w2) with whole weights, compiled, slow result, fast result, NumPy), and print."""
    return quietly(program.fix, mesh, *split[0])


@pytest.fixture(scope="package")
def timed(mesh):
    """(on_one, on_eight, µs on one, µs on eight), and what the page printed."""
    return quietly(slower.one_and_eight, mesh)


@pytest.fixture(scope="package")
def train(timed):
    """The traced training step's spans on eight devices, and the printed shares."""
    return quietly(slower.trace_train, timed[0][1])
