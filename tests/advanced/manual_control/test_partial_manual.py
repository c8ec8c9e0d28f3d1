from pathlib import Path

import jax
import numpy as np
import pytest
from jax import P

from snippets.advanced.manual_control import partial_manual
from snippets.hlo import count_collectives

PAGE = Path(__file__).resolve().parents[3] / "docs" / "advanced" / "manual-control.md"


def reference(x, w):
    h = np.asarray(x) @ np.asarray(w)
    return np.sum(h**2), 2 * np.asarray(x).T @ h


def test_the_body_is_manual_over_data_and_automatic_over_model(grid_data, capsys):
    mesh, x, w = grid_data
    capsys.readouterr()
    _, loss, grad = partial_manual.run_partial(mesh, x, w)
    ref_loss, ref_grad = reference(x, w)
    np.testing.assert_allclose(loss, ref_loss, rtol=1e-5)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-5, atol=1e-5)
    # Nobody asked for it: the compiler kept the gradient's columns split over "model".
    assert grad.sharding.spec == P(None, "model")
    assert {s.data.shape for s in grad.addressable_shards} == {(8, 8)}
    assert capsys.readouterr().out.splitlines() == [
        "axes in the body: {'data': 'Manual', 'model': 'Auto'}",
        "x_block: float32[8,8]{V:data}  w: float32[8,32]",
        "grad: float32[8,32] P(None, 'model')",
        "each device holds (8, 8)",
        "loss as unsharded: True",
        "grad as unsharded: True",
    ]


def test_the_partitioner_adds_the_model_all_reduce_and_yours_runs_over_data(
    grid_data, capsys
):
    mesh, x, w = grid_data
    step, _, _ = partial_manual.run_partial(mesh, x, w)
    capsys.readouterr()
    found = partial_manual.compiled_axes(step, mesh, x, w)
    assert found == [
        ("all-reduce", "f32[]", ("model",), "partitioner"),
        ("all-reduce", "(f32[], f32[8,8])", ("data",), "your code"),
    ]
    assert count_collectives(step.lower(x, w).compile()) == {"all-reduce": 2}
    # no all-gather: in this CPU program no device held all of w, as the page says
    said = " ".join(PAGE.read_text().split())
    assert (
        "in the program compiled for the CPU backend no device held all of `w`" in said
    )
    assert capsys.readouterr().out.splitlines() == [
        "all-reduce f32[]                  over ('model',)   from partitioner",
        "all-reduce (f32[], f32[8,8])      over ('data',)    from your code",
    ]


def test_the_page_explains_the_iota_spelling_the_program_uses(grid_data):
    mesh, x, w = grid_data
    step, _, _ = partial_manual.run_partial(mesh, x, w)
    hlo = step.lower(x, w).compile().as_text()
    assert "replica_groups=[2,4]<=[8]" in hlo
    assert "replica_groups=mesh['data'=2,'model'=4] {'data'}" in hlo
    page = " ".join(PAGE.read_text().split())
    assert (
        '`[2,4]<=[8]` means "number the devices 0 to 7 and cut them into 2 groups of 4"'
        in page
    )
    assert "that is `{0,1,2,3}` and `{4,5,6,7}`" in page


def test_without_axis_names_every_axis_is_manual(grid_data, capsys):
    # The annotation: leave axis_names out and the body is manual over both axes. Then w must
    # arrive whole (P() over "model" too): the program gathers it first, and every device
    # computes and all-reduces the whole (8, 32) gradient instead of its own columns.
    mesh, x, w = grid_data
    full = jax.jit(
        jax.shard_map(
            partial_manual.loss_and_grad,
            mesh=mesh,
            in_specs=(P("data"), P()),
            out_specs=(P(), P()),
        )
    )
    capsys.readouterr()
    loss, grad = full(x, w)
    assert capsys.readouterr().out.splitlines()[0] == (
        "axes in the body: {'data': 'Manual', 'model': 'Manual'}"
    )
    np.testing.assert_allclose(loss, reference(x, w)[0], rtol=1e-5)
    np.testing.assert_allclose(grad, reference(x, w)[1], rtol=1e-5, atol=1e-5)
    assert partial_manual.collective_axes(full.lower(x, w).compile(), mesh) == [
        ("all-gather", "f32[8,32]", ("model",), "partitioner"),
        ("all-reduce", "(f32[], f32[8,32])", ("data",), "your code"),
    ]


@pytest.mark.parametrize(
    ("groups", "axes"),
    [
        ("mesh['data'=2,'model'=4] {'data'}", ("data",)),
        ("mesh['data'=2,'model'=4] {'data','model'}", ("data", "model")),
        ("[2,4]<=[8]", ("model",)),
        ("[4,2]<=[2,4]T(1,0)", ("data",)),
        ("[1,8]<=[8]", ("data", "model")),
        ("{{0,1,2,3},{4,5,6,7}}", ("model",)),
        ("{{0,4},{1,5},{2,6},{3,7}}", ("data",)),
    ],
)
def test_group_axes_reads_every_spelling(grid_data, groups, axes):
    assert partial_manual.group_axes(groups, grid_data[0]) == axes


@pytest.mark.parametrize(
    ("groups", "message"),
    [
        ("mesh['x'=8] {'x'}", "compiled for another mesh"),
        ("[2,8]<=[16]", "compiled for another mesh"),
        ("{{0,8},{1,9}}", "names devices that a 8-device mesh lacks"),
    ],
)
def test_group_axes_refuses_groups_of_another_mesh(grid_data, groups, message):
    with pytest.raises(ValueError, match=message):
        partial_manual.group_axes(groups, grid_data[0])


def test_an_explicit_model_axis_shows_in_the_types(grid_data, capsys):
    _, x, w = grid_data
    capsys.readouterr()
    _, loss, grad = partial_manual.explicit_model(x, w)
    ref_loss, ref_grad = reference(x, w)
    np.testing.assert_allclose(loss, ref_loss, rtol=1e-5)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-5, atol=1e-5)
    assert grad.sharding.spec == P(None, "model")
    assert capsys.readouterr().out.splitlines() == [
        "axes in the body: {'data': 'Manual', 'model': 'Explicit'}",
        "x_block: float32[8,8]{V:data}  w: float32[8,32@model]",
        "grad: float32[8,32@model]",
    ]
