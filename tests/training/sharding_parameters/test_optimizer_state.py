import jax
from flax import nnx
from jax.sharding import SingleDeviceSharding

from snippets.training.sharding_parameters import optimizer_state

from .test_path_rules import table_rows


def moments(optimizer):
    adam = optimizer.opt_state[0]
    return jax.tree.leaves(adam.mu), jax.tree.leaves(adam.nu)


def test_adam_moments_take_the_parameters_shardings(run):
    for model, optimizer in [
        (run.model, run.optimizer),
        (run.annotated, run.annotated_opt),
    ]:
        params = jax.tree.leaves(nnx.state(model, nnx.Param))
        for leaves in moments(optimizer):
            for m, p in zip(leaves, params, strict=True):
                assert m.sharding == p.sharding
                assert m.addressable_shards[0].data.shape == (
                    p.addressable_shards[0].data.shape
                )


def test_the_table_lists_mu_and_nu_with_the_parameters_specs(run):
    rows = table_rows(run.optimizer_out)
    assert [row[0] for row in rows] == [
        "opt_state/0/count",
        *[f"opt_state/0/{m}/{p}" for m in ("mu", "nu") for p in (
            "down/bias", "down/kernel", "up/bias", "up/kernel"
        )],
        "step",
    ]  # fmt: skip
    specs = [row[2] for row in rows]
    assert (
        specs[1:5]
        == specs[5:9]
        == [
            "P()",
            "P('model', None)",
            "P('model',)",
            "P(None, 'model')",
        ]
    )
    assert specs[0] == specs[9] == "one device"


def test_the_counters_start_on_one_device_without_a_mesh_context(run):
    # run.optimizer is never trained; test_train checks that training moves them.
    adam = run.optimizer.opt_state[0]
    for counter in (adam.count[...], run.optimizer.step[...]):
        assert isinstance(counter.sharding, SingleDeviceSharding)


def test_the_annotated_optimizer_needs_a_mesh_too(run, capsys):
    optimizer_state.optimizer_without_mesh(run.annotated)
    assert capsys.readouterr().out == (
        "ValueError: An auto mesh context or metadata is required if creating a "
        "variable with annotation out_sharding=P(None,). For more guidance, see "
        "https://flax.readthedocs.io/en/latest/flip/4844-var-eager-sharding.html.\n"
    )


def test_under_set_mesh_mu_and_nu_are_laid_out_like_the_parameters(run):
    assert run.annotated_opt_out.splitlines() == [
        "mu is laid out like the parameters: True",
        "nu is laid out like the parameters: True",
    ]
    adam = run.annotated_opt.opt_state[0]
    assert adam.count[...].sharding.mesh == run.mesh
