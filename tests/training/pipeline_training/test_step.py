import contextlib
import io
from fractions import Fraction

import jax
import numpy as np
import pytest

from docs_build import pipeline_chart
from snippets.hlo import count_collectives
from snippets.training.pipeline.stages import build_model
from snippets.training.pipeline_training import schedule as sc
from snippets.training.pipeline_training import step as st
from snippets.training.pipeline_training import train as tr


@pytest.fixture(scope="module")
def run():
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        stages, x, _ = build_model()
        found = st.check_step(stages, x)
    return stages, x, found, printed.getvalue()


def test_both_schedules_match_one_device(run):
    *_, found, printed = run
    assert printed.splitlines()[-2:] == [
        "gpipe: loss within 1e-06 of one device: True, gradients within 1e-06: True",
        " 1f1b: loss within 1e-06 of one device: True, gradients within 1e-06: True",
    ]
    want_loss, want_grads = found["want"]
    params = found["params"]
    for _kind, step in found["steps"].items():
        loss, grads, _ = step(params, found["xs"], found["ys"])
        np.testing.assert_allclose(loss, want_loss, rtol=1e-6)
        assert jax.tree.structure(grads) == jax.tree.structure(params)
        for g, w, p in zip(
            jax.tree.leaves(grads),
            jax.tree.leaves(want_grads),
            jax.tree.leaves(params),
            strict=False,
        ):
            assert g.sharding.spec[0] == p.sharding.spec[0] == "stage"  # stacked
            assert np.abs(w).max() > 1e-4  # a gradient worth comparing
            np.testing.assert_allclose(g, w, atol=1e-6, rtol=1e-5)


def test_the_run_follows_its_table(run):
    *_, found, _ = run
    for kind, step in found["steps"].items():
        _, _, ran = step(found["params"], found["xs"], found["ys"])
        table = sc.make_schedule(kind, 8, 8)
        ran = np.asarray(ran)
        want = np.full(ran.shape, -1)
        for (t, s), (_, m) in table.items():
            want[s, t] = m
        np.testing.assert_array_equal(ran, want)


def test_the_chart_shows_what_ran(run):
    """The figure's jobs are the jobs the compiled program recorded, slot by slot."""
    stages, x, _, _ = run
    from jax import P
    from jax.sharding import NamedSharding

    from snippets.training.pipeline.gpipe import split_microbatches
    from snippets.training.pipeline.stages import place_stages

    mesh, graphdef, params = place_stages(stages[:4])
    xs = jax.device_put(split_microbatches(x, 8), NamedSharding(mesh, P()))
    for kind in ["gpipe", "1f1b"]:
        table = sc.make_schedule(kind, 4, 8)
        _, _, ran = st.pipeline_step(graphdef, mesh, table, 8)(params, xs, xs)
        _, text = pipeline_chart.draw(table, 4, kind)
        for s, line in enumerate(text.splitlines()[2:]):
            drawn = [int(w[1:]) for w in line.split(": ")[1].split() if w[0] in "FB"]
            assert drawn == [m for m in np.asarray(ran)[s] if m >= 0]


def test_collectives_two_transfers_per_step_and_the_loss_sum(run):
    *_, found, _ = run
    step = found["steps"]["1f1b"]
    compiled = step.lower(found["params"], found["xs"], found["ys"]).compile()
    assert count_collectives(compiled) == {"collective-permute": 4, "all-reduce": 1}


def test_a_bad_table_is_refused_before_it_runs(run):
    *_, found, _ = run
    table = sc.make_schedule("1f1b", 8, 8)
    del table[max(table)]
    with pytest.raises(ValueError, match="never runs"):
        st.pipeline_step(found["graphdef"], found["mesh"], table, 8)


def test_training_matches_one_device_and_lowers_the_loss(run, capsys):
    _, x, found, _ = run
    pipelined, single = tr.train(
        x,
        found["y"],
        found["graphdef"],
        found["params"],
        found["xs"],
        found["ys"],
        found["steps"],
    )
    np.testing.assert_allclose(pipelined, single, rtol=1e-5)
    assert pipelined[-1] < pipelined[0]
    lines = capsys.readouterr().out.splitlines()
    assert lines[2] == "every step within a relative 1e-05: True"


def test_the_training_bubble_is_the_formula(run, capsys):
    stages, x, _, _ = run
    found = tr.training_bubble(stages, x)
    for (_kind, s, m), measured in found.items():
        assert measured == Fraction(s - 1, m + s - 1)
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[1:]]
    assert [r[3] == r[4] for r in rows] == [True] * 6


def test_1f1b_needs_fewer_temporaries_on_cpu(run, capsys):
    stages, *_ = run
    found = tr.memory(stages)
    for m in (32, 64):
        held_g, temp_g = found[m, "gpipe"]
        held_1, temp_1 = found[m, "1f1b"]
        assert (held_g, held_1) == (m, 8)
        # GPipe's two buffers hold the whole batch (4096 x 32 float32, twice).
        assert temp_g >= 2 * 4096 * 32 * 4
        assert temp_1 < temp_g / 2
    assert found[64, "1f1b"][1] < found[32, "1f1b"][1]
