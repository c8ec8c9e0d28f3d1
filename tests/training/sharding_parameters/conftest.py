"""The sharding-parameters page's program, run once for all of its tests."""

import contextlib
import io
from types import SimpleNamespace

import jax
import numpy as np
import pytest
from flax import nnx

from snippets.training.sharding_parameters import (
    annotations,
    optimizer_state,
    path_rules,
    train,
)


def printed(fn, *args):
    """Call fn, returning its result and what it printed (for shared fixtures)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = fn(*args)
    return result, out.getvalue()


@pytest.fixture(scope="package")
def run():
    """Mesh, both sharded models, their optimizers, and the annotated model trained."""
    mesh, mesh_out = printed(path_rules.build_mesh)
    model, model_out = printed(path_rules.sharded_model, mesh)
    annotated, annotated_out = printed(annotations.with_mesh, mesh)
    # As created, before the training below changes them.
    initial = [
        (v.sharding, np.asarray(v)) for v in jax.tree.leaves(nnx.state(annotated))
    ]
    _, specs_out = printed(annotations.partition_specs, annotated, model)
    optimizer, optimizer_out = printed(optimizer_state.rules_optimizer, model)
    annotated_opt, annotated_opt_out = printed(
        optimizer_state.optimizer_with_mesh, annotated, mesh
    )
    losses, train_out = printed(train.train, annotated, annotated_opt, mesh)
    (ref_losses, ref_model), compare_out = printed(train.compare, losses, annotated)
    return SimpleNamespace(**locals())
