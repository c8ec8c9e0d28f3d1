import contextlib
import io

import jax
import numpy as np
import pytest
from jax import P

from snippets.hlo import count_collectives
from snippets.training.pipeline import gpipe as gp


@pytest.fixture(scope="module")
def run(model):
    """The page's run, once for the module, with what it printed."""
    stages, x, expected = model
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        result = gp.run_pipeline(stages, x, expected)
    return result, printed.getvalue()


def test_split_microbatches_keeps_the_rows_in_order():
    x = np.arange(64 * 3, dtype=np.float32).reshape(64, 3)
    xs = gp.split_microbatches(x, 4)
    assert xs.shape == (4, 16, 3)
    np.testing.assert_array_equal(xs[1], x[16:32])


@pytest.mark.parametrize("count", [5, 0, 128])
def test_a_batch_that_does_not_divide_is_refused(count):
    with pytest.raises(ValueError) as err:
        gp.split_microbatches(np.zeros((64, 3)), count)
    assert str(err.value) == (
        f"a batch of 64 cannot be cut into {count} equal microbatches: choose a "
        "number of microbatches that divides 64."
    )


def test_the_pipeline_equals_the_stages_run_in_sequence(model, run):
    _, _, expected = model
    (_, _, params, forward, xs, _), printed = run
    acts, _ = forward(params, xs)
    assert str(jax.typeof(acts)) == "float32[8@stage,4,16,32]"
    assert acts.sharding.spec == P("stage", None, None, None)
    np.testing.assert_allclose(
        np.asarray(acts)[-1].reshape(64, 32), expected, rtol=1e-5, atol=1e-6
    )
    first, second = printed.splitlines()
    assert first == "acts: float32[8@stage,4,16,32]"
    assert second == "within 1e-05 of run_sequential: True"


def test_each_stage_keeps_its_own_activations(model, run):
    stages, x, _ = model
    (_, _, params, forward, xs, _), _ = run
    acts = np.asarray(forward(params, xs)[0])
    h = x
    for s, stage in enumerate(stages):
        h = stage(h)
        np.testing.assert_allclose(acts[s].reshape(64, 32), h, rtol=1e-5, atol=1e-6)


def test_the_recorded_schedule_is_gpipe(run):
    (_, _, _, _, _, ran), _ = run
    ran = np.asarray(ran)
    assert ran.shape == (8, 4 + 8 - 1)
    for stage in range(8):
        for step in range(11):
            m = step - stage
            assert ran[stage, step] == (m if 0 <= m < 4 else -1)


def test_the_only_collectives_are_two_transfers_to_the_next_stage(run, capsys):
    (_, _, params, forward, xs, _), _ = run
    compiled = forward.lower(params, xs).compile()
    assert count_collectives(compiled) == {"collective-permute": 2}
    assert "source_target_pairs={{0,1},{1,2},{2,3},{3,4},{4,5},{5,6},{6,7},{7,0}}" in (
        compiled.as_text()
    )
    assert gp.collectives(forward, params, xs) == {"collective-permute": 2}
    assert capsys.readouterr().out == "collective-permute  2\n"


def test_show_schedule_draws_the_grid(run, capsys):
    (_, _, _, _, _, ran), _ = run
    gp.schedule(ran)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "step     0  1  2  3  4  5  6  7  8  9 10"
    assert lines[1] == "stage 0  0  1  2  3  ·  ·  ·  ·  ·  ·  ·"
    assert lines[8] == "stage 7  ·  ·  ·  ·  ·  ·  ·  0  1  2  3"
    assert len(lines) == 9


def test_the_chart_draws_what_the_loop_recorded(run):
    """The page's bubble chart (`pipeline_chart(ran, ...)`): stage s idles s steps, runs
    microbatches 0 to 3, then idles 7 - s, as `ran` says; a float array is refused."""
    from docs_build import render

    (_, _, _, _, _, ran), _ = run
    text = render.pipeline_chart(ran, 8, "t").text.splitlines()
    assert text[1] == "8 stages across, 11 steps; 56 of 88 slots idle"
    for s in range(8):
        idle = ([f"(idle {s})"] if s else []) + ["F0", "F1", "F2", "F3"]
        idle += [f"(idle {7 - s})"] if s < 7 else []
        assert text[2 + s] == f"stage {s}: " + " ".join(idle)
    assert "B: backward" not in render.pipeline_chart(ran, 8, "t").svg
    with pytest.raises(ValueError, match="an integer array of one row per stage"):
        render.pipeline_chart(np.asarray(ran, dtype=float), 8, "t")


def test_without_pcast_the_loop_carry_changes_type(model, run, monkeypatch):
    """What the page's note on `pcast` says: the carry starts the same on every stage, the
    loop makes it differ, and fori_loop refuses a carry whose type changes."""
    (mesh, graphdef, params, _, xs, _), _ = run
    monkeypatch.setattr(jax.lax, "pcast", lambda a, *args, **kwargs: a)
    with pytest.raises(TypeError, match="carry") as err:
        gp.gpipe(graphdef, mesh, num_microbatches=4)(params, xs)
    assert "stage" in str(err.value)
