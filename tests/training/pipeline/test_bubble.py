from fractions import Fraction

import numpy as np

from snippets.training.pipeline import bubble


def test_bubble_fraction_counts_the_slots_without_a_microbatch():
    ran = np.array([[0, 1, -1], [-1, 0, 1]])
    assert bubble.bubble_fraction(ran) == Fraction(2, 6)
    assert bubble.bubble_fraction(np.zeros((2, 5), int)) == 0


def test_the_first_run_wastes_7_of_11_slots(capsys):
    ran = np.array(
        [[m if 0 <= (m := t - s) < 4 else -1 for t in range(11)] for s in range(8)]
    )
    assert bubble.first_bubble(ran) == Fraction(7, 11)
    assert capsys.readouterr().out == "idle: 7/11 of all slots = 64%\n"


def test_measured_bubble_equals_the_formula(model, capsys):
    stages, x, _ = model
    found = bubble.bubble_table(stages, x)
    assert list(found) == [(8, 1), (8, 8), (8, 64), (4, 8)]
    for (s, m), measured in found.items():
        assert measured == Fraction(s - 1, m + s - 1)
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert rows[0] == ["stages", "microbatches", "measured", "(S-1)/(M+S-1)"]
    assert rows[1:] == [
        ["8", "1", "7/8", "7/8", "88%"],
        ["8", "8", "7/15", "7/15", "47%"],
        ["8", "64", "7/71", "7/71", "10%"],
        ["4", "8", "3/11", "3/11", "27%"],
    ]


def test_the_page_shows_the_microbatch_error(model, capsys):
    _, x, _ = model
    bubble.bad_microbatches(x)
    assert capsys.readouterr().out == (
        "ValueError: a batch of 64 cannot be cut into 5 equal microbatches: "
        "choose a number of microbatches that divides 64.\n"
    )
