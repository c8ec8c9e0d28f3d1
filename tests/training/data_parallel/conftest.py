"""The data-parallel page's program, run once for all of its tests."""

import contextlib
import io
from types import SimpleNamespace

import pytest

from snippets.training.data_parallel import train


def printed(fn, *args):
    """Call fn, returning its result and what it printed (for module-scoped fixtures)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = fn(*args)
    return result, out.getvalue()


@pytest.fixture(scope="package")
def run():
    """The page's program, once: mesh, batch, failed step, replication, training."""
    mesh, mesh_out = printed(train.build_mesh)
    (data, x, y), batch_out = printed(train.first_batch, mesh)
    (model, optimizer, step), unplaced_out = printed(train.unplaced_parameters, x, y)
    _, replicate_out = printed(train.replicate, model, optimizer, mesh)
    (losses, _, _), train_out = printed(train.train, model, optimizer, step, data, mesh)
    (ref_losses, ref_model), ref_out = printed(
        train.compare_with_reference, losses, model
    )
    return SimpleNamespace(**locals())
