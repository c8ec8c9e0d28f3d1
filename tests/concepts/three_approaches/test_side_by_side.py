import re

import pytest

from snippets.concepts.three_approaches import (
    automatic,
    explicit,
    layer,
    manual,
    side_by_side,
)
from snippets.hlo import read_collectives


@pytest.fixture(scope="module")
def programs():
    x, W, b, reference = layer.make_data()
    _, x_auto, W_auto, b_auto = automatic.place_on_auto_mesh(x, W, b)
    auto = automatic.run_automatic(x_auto, W_auto, b_auto, reference)
    explicit_mesh, x_exp, W_exp, b_exp = explicit.place_on_explicit_mesh(x, W, b)
    exp = explicit.run_explicit(explicit_mesh, x_exp, W_exp, b_exp, reference)
    man = manual.run_manual(explicit_mesh, x_exp, W_exp, b_exp, reference)
    return (*auto, *exp, *man, reference)


def test_each_all_reduce_carries_the_four_partial_sums(programs):
    auto_compiled, explicit_compiled, manual_compiled = programs[1:6:2]
    for compiled in (auto_compiled, explicit_compiled, manual_compiled):
        (c,) = read_collectives(compiled)
        assert (c.kind, c.result, c.group_size) == ("all-reduce", "f32[4]", 8)


def test_the_table_of_the_three(programs, capsys):
    capsys.readouterr()
    counts = side_by_side.side_by_side(*programs)
    assert counts == {
        "automatic": {"all-reduce": 1},
        "explicit": {"all-reduce": 1},
        "manual": {"all-reduce": 1},
    }
    table = [re.split(r"\s{2,}", line) for line in capsys.readouterr().out.splitlines()]
    assert table == [
        ["approach", "collectives", "all-reduced", "replicated", "matches NumPy"],
        ["automatic", "{'all-reduce': 1}", "f32[4]", "True", "True"],
        ["explicit", "{'all-reduce': 1}", "f32[4]", "True", "True"],
        ["manual", "{'all-reduce': 1}", "f32[4]", "True", "True"],
        ["all three bit for bit equal: True"],
    ]
