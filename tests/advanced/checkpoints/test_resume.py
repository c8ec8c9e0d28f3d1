import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax import P
from jax.sharding import NamedSharding

from snippets.advanced.checkpoints import resume, state
from snippets.models import batches, train_reference

PAGE = Path(__file__).resolve().parents[3] / "docs" / "advanced" / "checkpoints.md"


def test_the_resumed_run_continues_with_the_losses_of_the_run_that_kept_on(resumed):
    (kept_on, resumed_losses, _, _), _ = resumed
    assert len(kept_on) == len(resumed_losses) == 3
    np.testing.assert_allclose(resumed_losses, kept_on, rtol=0, atol=1e-5)


def test_both_runs_train_like_one_device(resumed):
    (kept_on, resumed_losses, _, _), _ = resumed
    reference, _ = train_reference(steps=6, batch=64)
    np.testing.assert_allclose(kept_on, reference[3:], rtol=0, atol=1e-5)
    np.testing.assert_allclose(resumed_losses, reference[3:], rtol=0, atol=1e-5)


def test_the_weights_agree_and_keep_their_layouts(resumed, placed, model_mesh):
    (_, _, (model, optimizer), (model_tp, optimizer_tp)), _ = resumed
    (data_mesh, _, _), _ = placed
    for array, mesh, spec in [
        (model.up.kernel[...], data_mesh, P(None, "data")),
        (model_tp.up.kernel[...], model_mesh, P(None, "model")),
        (optimizer_tp.opt_state[0].mu["down"]["kernel"][...], model_mesh, P("model")),
    ]:
        assert array.sharding.is_equivalent_to(NamedSharding(mesh, spec), array.ndim)
    assert int(optimizer.step[...]) == int(optimizer_tp.step[...]) == 6
    gaps = jax.tree.map(
        lambda a, b: float(np.max(np.abs(np.asarray(a) - np.asarray(b)))),
        state.state_of(model, optimizer),
        state.state_of(model_tp, optimizer_tp),
    )
    assert max(jax.tree.leaves(gaps)) < 1e-5


def test_the_printout_has_both_columns_and_the_restored_step(resumed):
    (kept_on, resumed_losses, _, _), printed = resumed
    lines = printed.splitlines()
    assert lines[0] == "restored at step 3"
    rows = [line.split() for line in lines[2:5]]
    assert [int(r[0]) for r in rows] == [3, 4, 5]
    assert [r[1] for r in rows] == [f"{v:.3f}" for v in kept_on]
    assert [r[2] for r in rows] == [f"{v:.3f}" for v in resumed_losses]
    assert lines[5] == "within 1e-05 of each other: True"


def test_the_step_count_matters(resumed, resume_dir, model_mesh):
    """The page's claim: an optimizer whose step count restarts at 0 takes other steps."""
    (_, resumed_losses, _, _), _ = resumed
    model_tp, optimizer_tp = state.restore_train_state(
        resume_dir / "step-3", model_mesh, state.TENSOR_PARALLEL
    )
    count = optimizer_tp.opt_state[0].count
    count.set_value(jnp.zeros_like(count[...]))
    data = batches(6, 64)[3:]
    whole = NamedSharding(model_mesh, P())
    restarted = resume.train(model_tp, optimizer_tp, data, whole)
    assert (
        max(abs(a - b) for a, b in zip(restarted, resumed_losses, strict=True)) > 1e-4
    )


def test_the_prose_quotes_the_tolerance_the_tests_hold():
    text = " ".join(PAGE.read_text(encoding="utf-8").split())
    assert "(The tests hold them to 1e-5, as the training pages do.)" in text


def test_the_checkpoint_holds_no_data_position_and_no_random_key(resumed):
    """The page's note: the saved state is the model and the optimizer, nothing else, and
    the step count is the only position this run needs."""
    (_, _, (model, optimizer), _), _ = resumed
    saved = state.state_of(model, optimizer)
    paths = [jax.tree_util.keystr(p) for p, _ in jax.tree.leaves_with_path(saved)]
    assert len(paths) == 14
    assert not [p for p in paths if re.search(r"rng|key|data|position", p, re.I)]
    for leaf in jax.tree.leaves(saved):
        assert not jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key)
