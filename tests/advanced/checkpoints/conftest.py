"""The page's meshes, its FSDP train state and its checkpoint, built once for its tests."""

import contextlib
import io
from pathlib import Path

import jax
import pytest
from jax.sharding import AxisType

from snippets.advanced.checkpoints import resume, state


def quietly(function, *args):
    """Call `function`, returning its result and what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = function(*args)
    return result, out.getvalue()


@pytest.fixture(scope="package")
def placed(devices):
    """(data mesh, model, optimizer) as the page places them, and the printout."""
    return quietly(state.fsdp_state)


@pytest.fixture(scope="package")
def saved(placed):
    """(workdir, directory, saved state) after the page's save, and the listing."""
    (_, model, optimizer), _ = placed
    (workdir, directory, saved), listing = quietly(state.save_fsdp, model, optimizer)
    yield (workdir, directory, saved), listing
    workdir.cleanup()


@pytest.fixture(scope="package")
def restored(saved):
    """(model mesh, model, optimizer) restored onto 4 devices, and the printout."""
    (_, directory, saved_state), _ = saved
    return quietly(state.restore_on_four, directory, saved_state)


@pytest.fixture(scope="package")
def model_mesh(devices):
    return jax.make_mesh(
        (4,), ("model",), axis_types=(AxisType.Auto,), devices=devices[:4]
    )


@pytest.fixture(scope="package")
def resume_dir(tmp_path_factory) -> Path:
    return Path(tmp_path_factory.mktemp("resume"))


@pytest.fixture(scope="package")
def resumed(placed, model_mesh, resume_dir):
    """The page's resume: (kept_on, resumed, FSDP pair, TP pair), and the printout."""
    (data_mesh, _, _), _ = placed
    return quietly(resume.resume, data_mesh, model_mesh, resume_dir)
