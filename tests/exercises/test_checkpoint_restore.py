"""checkpoint_restore: what its reference solution refuses, and what its grader watches."""

import jax
import pytest
from jax import P
from jax.sharding import AxisType
from orbax.checkpoint import v1 as ocp

from snippets.advanced.checkpoints.state import FSDP, sharded_train_state, state_of
from snippets.exercises import solution

checkpoint_restore = solution("checkpoint_restore")


@pytest.fixture(scope="module")
def fsdp_checkpoint(tmp_path_factory):
    data = jax.make_mesh((8,), ("data",), axis_types=(AxisType.Explicit,))
    path = tmp_path_factory.mktemp("checkpoint") / "fsdp"
    ocp.save(path, state_of(*sharded_train_state(data, FSDP)))
    return path


def test_the_solution_says_what_to_change(fsdp_checkpoint):
    three = jax.make_mesh(
        (3,), ("model",), axis_types=(AxisType.Explicit,), devices=jax.devices()[:3]
    )
    with pytest.raises(ValueError, match=r"specs name \['up.kernal'\]; the checkpoint"):
        checkpoint_restore(fsdp_checkpoint, three, {"up.kernal": P()})
    with pytest.raises(
        ValueError,
        match=r"model.down.kernel \(128, 8\) cannot be split as P\(None, 'model'\) on a "
        r"mesh \{'model': 3\}",
    ):
        checkpoint_restore(fsdp_checkpoint, three, {"down.kernel": P(None, "model")})


def test_the_grader_drops_only_a_failed_loads_leftovers(monkeypatch):
    """test_wrong_answers.py fails on any leftover a wrong answer's failed ocp.load prints
    ("Exception ignored ... Event loop is closed"); an unrelated one still shows."""
    import gc

    from snippets.exercises.check import failed_loads_kept_quiet

    seen = []
    monkeypatch.setattr("sys.unraisablehook", seen.append)

    class Noisy:
        def __del__(self):
            raise ValueError("not Orbax's")

    with failed_loads_kept_quiet() as quiet:
        Noisy()
        quiet.collect = True
    gc.collect()
    assert [type(u.exc_value) for u in seen] == [ValueError]


def test_the_grader_records_only_the_arrays_orbax_builds_during_the_call():
    """Reads watches jax.make_array_from_single_device_arrays around the call only: what
    the reference solution reads is on the target layouts, and the function is put back
    even when the call raises."""
    from snippets.exercises.checkpoint_restore.grader import (
        Reads,
        checkpoint_restore_cases,
    )

    make = jax.make_array_from_single_device_arrays
    case = checkpoint_restore_cases()[0]
    args = case.args()
    seen = Reads()
    with seen.watching():
        restored = checkpoint_restore(*args)
    assert jax.make_array_from_single_device_arrays is make
    leaves = jax.tree.leaves(restored)
    assert len(seen.arrays) == len(leaves) == 14
    assert sorted(str(s.spec) for _, s in seen.arrays) == sorted(
        str(a.sharding.spec) for a in leaves
    )
    assert case.check(restored, args) == []
    with pytest.raises(RuntimeError), seen.watching():
        raise RuntimeError
    assert jax.make_array_from_single_device_arrays is make and seen.arrays == []
