import contextlib
import io

import numpy as np
import pytest

from snippets.hlo import count_collectives, read_collectives
from snippets.training.data_parallel import all_reduce


@pytest.fixture(scope="module")
def compiled_step(run):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        compiled = all_reduce.compiled_step(
            run.step, run.model, run.optimizer, run.x, run.y
        )
    return compiled, out.getvalue()


def test_one_all_reduce_and_nothing_else(compiled_step):
    compiled, _ = compiled_step
    assert count_collectives(compiled) == {"all-reduce": 1}


def test_the_all_reduce_carries_every_gradient_and_the_loss(compiled_step):
    compiled, out = compiled_step
    (c,) = read_collectives(compiled)
    shapes = c.result.strip("()").split(", ")
    assert shapes == ["f32[8]", "f32[8,128]", "f32[128]", "f32[128,32]", "f32[]"]
    # The kernels' gradients come transposed; their sizes are the parameters' sizes.
    sizes = [int(np.prod([int(d) for d in s[4:-1].split(",") if d])) for s in shapes]
    assert sizes == [8, 1024, 128, 4096, 1]
    assert c.result_bytes == 4 * (5256 + 1)
    assert out.splitlines() == [
        "all-reduce          1",
        "one all-reduce of: (f32[8], f32[8,128], f32[128], f32[128,32], f32[])",
        "parameters: 8 + 1024 + 128 + 4096 = 5256 numbers",
    ]
