import contextlib
import io

import numpy as np
import pytest

from snippets.hlo import count_collectives
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
    operands = all_reduce.all_reduce_operands(compiled)
    assert operands == [["f32[8]", "f32[8,128]", "f32[128]", "f32[128,32]", "f32[]"]]
    # The kernels' gradients come transposed; their sizes are the parameters' sizes.
    sizes = [
        int(np.prod([int(d) for d in s[4:-1].split(",") if d])) for s in operands[0]
    ]
    assert sizes == [8, 1024, 128, 4096, 1]
    assert out.splitlines() == [
        "all-reduce          1",
        "one all-reduce of: f32[8], f32[8,128], f32[128], f32[128,32], f32[]",
        "parameters: 8 + 1024 + 128 + 4096 = 5256 numbers",
    ]


class FakeCompiled:
    def __init__(self, text):
        self.text = text

    def as_text(self):
        return self.text


def test_all_reduce_operands_reads_single_and_tuple_all_reduces():
    hlo = (
        "  %a = f32[4,2]{1,0} all-reduce(%p), channel_id=1, to_apply=%add\n"
        "  %b = (f32[3]{0}, bf16[]) all-reduce-start(%q, %r), to_apply=%add\n"
        "  %c = f32[4,2]{1,0} add(%a, %a)\n"
    )
    assert all_reduce.all_reduce_operands(FakeCompiled(hlo)) == [
        ["f32[4,2]"],
        ["f32[3]", "bf16[]"],
    ]
