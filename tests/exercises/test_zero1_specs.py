"""zero1_specs: the grader's step check refuses an update that is not one device's, and the
reference solution's layout is ZeRO-1's on a mesh with a second axis."""

import pytest
from jax import P

from snippets.exercises import solution
from snippets.exercises.common import make_mesh
from snippets.exercises.zero1_specs import grader

zero1_specs = solution("zero1_specs")


def test_the_solution_splits_only_the_moments_and_only_over_data():
    mesh = make_mesh((4, 2), ("data", "model"), auto=True)
    specs = zero1_specs(grader.mlp_shapes(30, 20, 6), mesh)
    assert set(specs["params"].values()) == set(specs["grads"].values()) == {P()}
    assert specs["moments"] == {
        "up.kernel": P(None, "data"),  # 20, not 30
        "up.bias": P("data"),
        "down.kernel": P("data"),  # 20, not 6
        "down.bias": P(),  # 6 does not split over 4
    }


def test_no_data_axis_says_what_to_name():
    with pytest.raises(ValueError, match="an axis named 'data'"):
        zero1_specs({"w": (8,)}, make_mesh((8,), ("model",)))


def test_the_step_check_refuses_an_update_unlike_one_devices():
    """The layout cannot change the numbers, so the check is shown failing on a reference
    trained at another learning rate: the same comparison, a real difference."""
    mesh = make_mesh((8,), ("data",), auto=True)
    sizes = (32, 128, 8)
    specs = zero1_specs(grader.mlp_shapes(*sizes), mesh)
    state = grader.build_state(specs, grader.mlp_shapes(*sizes), mesh, sizes, 0)
    assert grader.step_problems(state, mesh, sizes, 0) == []
    state = grader.build_state(specs, grader.mlp_shapes(*sizes), mesh, sizes, 0)
    (problem,) = grader.step_problems(state, mesh, sizes, 0, lr=2e-2)
    assert problem.startswith("after 2 Adam steps in this layout the parameters differ")
