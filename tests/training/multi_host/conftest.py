import contextlib
import io

import pytest

from snippets.training.multi_host import one_process, worker


@pytest.fixture(scope="package")
def data():
    """The page's data set: 5 batches of 64 rows, as NumPy arrays."""
    return worker.dataset(steps=5, batch=64)


@pytest.fixture(scope="package")
def single_run(data):
    """The worker's training in this one process of 8 devices, as the page runs it:
    (losses, weights, reference losses, reference model), and what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = one_process.train_here(worker.data_mesh(), *data)
    return result, out.getvalue()
