import re

from flax import nnx
from jax import P

from snippets.training.fsdp import memory

P_BYTES = 4 * (32 * 128 + 128 + 128 * 8 + 8)  # 21024


def test_the_replicated_baseline_is_whole_everywhere(replicated):
    model, optimizer = replicated
    assert model.up.kernel[...].sharding.spec == P()
    assert {s.data.shape for s in model.up.kernel[...].addressable_shards} == {
        (32, 128)
    }
    assert optimizer.opt_state[0].mu["up"]["kernel"][...].sharding.spec == P()


def test_fsdp_stores_an_eighth_of_params_and_adam_state(placed, replicated):
    model, optimizer = placed[0][1], placed[0][2]
    assert P_BYTES == 21024
    assert memory.bytes_per_device(*replicated) == [P_BYTES] * 3 + [3 * P_BYTES]
    assert memory.bytes_per_device(model, optimizer) == [P_BYTES // 8] * 3 + [
        3 * P_BYTES // 8
    ]


def test_the_printed_table_puts_measurements_next_to_formulas(
    placed, replicated, data_mesh, capsys
):
    model, optimizer = placed[0][1], placed[0][2]
    measured, formulas = memory.compare(model, optimizer, *replicated, data_mesh)
    assert measured["replicated"] == formulas["P"]
    assert measured["FSDP"] == formulas["P / 8"]
    table = [
        re.split(r"\s{2,}", line.strip())
        for line in capsys.readouterr().out.splitlines()
    ]
    assert table == [
        ["params", "mu", "nu", "total"],
        ["replicated", "21024", "21024", "21024", "63072"],
        ["FSDP", "2628", "2628", "2628", "7884"],
        ["P", "21024", "21024", "21024", "63072"],
        ["P / 8", "2628", "2628", "2628", "7884"],
    ]


def test_the_prose_quotes_the_models_own_size(replicated):
    """The pages' prose names P and the parameter count: both are the model's."""
    from pathlib import Path

    import jax

    model, _ = replicated
    count = sum(leaf.size for leaf in jax.tree.leaves(nnx.state(model, nnx.Param)))
    docs = Path(__file__).resolve().parents[3] / "docs" / "training"
    fsdp = " ".join((docs / "fsdp.md").read_text().split())
    data_parallel = " ".join((docs / "data-parallel.md").read_text().split())
    assert f"P, the bytes of the parameters: {count} float32 numbers" in fsdp
    assert f"Together they carry {4 * count} bytes, P" in fsdp
    assert f"Together they are the {count:,} parameters" in data_parallel
