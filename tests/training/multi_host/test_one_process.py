import jax
import numpy as np
from jax.sharding import AxisType

from snippets.training.multi_host import one_process


def test_this_page_is_one_process_of_eight_devices(capsys):
    one_process.process_view()
    assert capsys.readouterr().out.splitlines() == [
        "process 0 of 1",
        "devices of this process: 8",
        "devices of the run:      8",
    ]


def test_the_global_batch_block(capsys, data):
    mesh, x, _y = one_process.batch_here()
    assert dict(mesh.shape) == {"data": 8}
    np.testing.assert_array_equal(x, data[0])
    assert capsys.readouterr().out.splitlines() == [
        "this process's rows: slice(0, 64, None)",
        "what it loaded: (5, 64, 32) (5, 64, 8)",
        "one global batch: float32[64@data,32] float32[64@data,8]",
        "rows per device: {8}",
    ]


def test_the_training_block_prints_matching_losses(single_run):
    (losses, _, ref_losses, _), out = single_run
    lines = out.splitlines()
    assert lines[0] == "losses:            " + str(np.round(losses, 3))
    assert lines[1] == "train_reference:   " + str(np.round(ref_losses, 3))
    assert lines[0].split(":")[1].strip() == lines[1].split(":")[1].strip()
    assert lines[2] == "weights within 1e-05 of train_reference: True"


def test_the_bad_batch_block(capsys, data):

    mesh = jax.make_mesh((8,), ("data",), axis_types=(AxisType.Explicit,))
    one_process.bad_batch(mesh)
    assert capsys.readouterr().out == (
        "ValueError: a batch of 60 rows cannot be split over the 8 devices of mesh "
        "axis 'data': use a batch that is a multiple of 8.\n"
    )
