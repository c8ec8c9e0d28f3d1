import re

import pytest

from snippets.hlo import count_collectives, read_collectives
from snippets.training.two_d import communication
from tests.training.two_d.printed import quietly

SHAPES = [(8, 1), (4, 2), (2, 4), (1, 8)]


@pytest.fixture(scope="module")
def big(column_row, meshes):
    return quietly(communication.bigger_batch, column_row, meshes)


def table(text):
    return [re.split(r"\s{2,}", line.strip()) for line in text.strip().splitlines()]


def test_prepare_compiles_one_step_per_shape(runs):
    compiled, out = runs
    assert list(compiled) == SHAPES
    assert out == "all-reduce          2\n"
    assert {
        shape: count_collectives(run.compiled) for shape, run in compiled.items()
    } == {
        (8, 1): {"all-reduce": 1},
        (4, 2): {"all-reduce": 2},
        (2, 4): {"all-reduce": 2},
        (1, 8): {"all-reduce": 1},
    }


def test_the_2x4_step_carries_activations_then_gradients(runs, capsys):
    compiled = runs[0][(2, 4)].compiled
    found = read_collectives(compiled)
    gradients = 4 * (1 + 8 + 8 * 32 + 32 + 32 * 32)
    assert [(c.kind, c.result, c.result_bytes, c.group_size) for c in found] == [
        ("all-reduce", "f32[32,8]", 32 * 8 * 4, 4),  # over "model"
        ("all-reduce", "(f32[], f32[8], f32[8,32], f32[32], f32[32,32])", gradients, 2),
    ]
    assert [c.groups for c in found] == [
        [[0, 1, 2, 3], [4, 5, 6, 7]],
        [[0, 4], [1, 5], [2, 6], [3, 7]],
    ]
    communication.one_step_in_detail(runs[0])
    assert capsys.readouterr().out.splitlines()[1:3] == [
        "all-reduce              4         1,024        1,536     1  f32[32,8]",
        "all-reduce              2         5,284        5,284     1  "
        "(f32[], f32[8], f32[8,32], f32[32], f32[32,32])",
    ]


def test_formulas_give_the_measured_numbers():
    assert [communication.param_bytes(m) for m in (1, 2, 4, 8)] == [
        21024,
        10528,
        5280,
        2656,
    ]
    assert [communication.all_reduce_bytes(d, m, 64) for d, m in SHAPES] == [
        21028,
        11044,
        6308,
        2048,
    ]
    assert [communication.all_reduce_bytes(d, m, 1024) for d, m in SHAPES] == [
        21028,
        18724,
        21668,
        32768,
    ]


def test_measured_memory_and_traffic_equal_the_formulas(runs):
    for (n_data, n_model), run in runs[0].items():
        params = sum(
            leaf.addressable_shards[0].data.nbytes
            for leaf in [
                run.model.up.kernel[...],
                run.model.up.bias[...],
                run.model.down.kernel[...],
                run.model.down.bias[...],
            ]
        )
        assert params == communication.param_bytes(n_model)
        assert run.compiled.memory_analysis().argument_size_in_bytes == (
            communication.argument_bytes(n_data, n_model, 64)
        )
        total = sum(c.result_bytes for c in read_collectives(run.compiled))
        assert total == communication.all_reduce_bytes(n_data, n_model, 64)


def test_the_printed_tables(runs, capsys):
    communication.tables(runs[0])
    memory, traffic = capsys.readouterr().out.split("\n\n")
    assert memory.splitlines()[0] == "Bytes per device, cpu backend"
    assert traffic.splitlines()[0] == (
        "Collectives per step and their result bytes, cpu backend"
    )
    memory, traffic = (text.split("\n", 1)[1] for text in (memory, traffic))
    assert table(memory) == [
        ["mesh", "params/device", "formula", "step arguments", "formula"],
        ["8 x 1", "21024", "21024", "64360", "64360"],
        ["4 x 2", "10528", "10528", "34152", "34152"],
        ["2 x 4", "5280", "5280", "20968", "20968"],
        ["1 x 8", "2656", "2656", "18216", "18216"],
    ]
    assert table(traffic) == [
        ["mesh", "batch", "collectives", "bytes", "formula"],
        ["8 x 1", "64", "1 all-reduce", "21028", "21028"],
        ["4 x 2", "64", "2 all-reduce", "11044", "11044"],
        ["2 x 4", "64", "2 all-reduce", "6308", "6308"],
        ["1 x 8", "64", "1 all-reduce", "2048", "2048"],
    ]


def test_with_a_bigger_batch_the_mixed_mesh_moves_least(big):
    compiled, out = big
    totals = {
        shape: sum(c.result_bytes for c in read_collectives(run.compiled))
        for shape, run in compiled.items()
    }
    assert totals == {
        shape: communication.all_reduce_bytes(*shape, 1024) for shape in SHAPES
    }
    assert min(totals, key=totals.get) == (4, 2)
    assert max(totals, key=totals.get) == (1, 8)
    assert table(out)[2:] == [
        ["8 x 1", "1024", "1 all-reduce", "21028", "21028"],
        ["4 x 2", "1024", "2 all-reduce", "18724", "18724"],
        ["2 x 4", "1024", "2 all-reduce", "21668", "21668"],
        ["1 x 8", "1024", "1 all-reduce", "32768", "32768"],
    ]
