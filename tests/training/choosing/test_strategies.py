import jax
import numpy as np
import optax
import pytest
from flax import nnx
from jax import P

from snippets.models import D_HIDDEN, D_IN, D_OUT, MLP
from snippets.training.choosing import strategies as st


def fresh():
    model = MLP(D_IN, D_HIDDEN, D_OUT, rngs=nnx.Rngs(0))
    return model, nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)


def by_name(tree, f) -> dict:
    return {
        jax.tree_util.keystr(path[:-1], simple=True, separator="."): f(leaf)
        for path, leaf in jax.tree.leaves_with_path(tree)
    }


def specs_by_name(tree) -> dict[str, P]:
    return by_name(tree, lambda leaf: leaf.sharding.spec)


def test_the_table_lists_five_strategies_on_eight_devices():
    assert list(st.STRATEGIES) == [
        "data parallel",
        "FSDP",
        "tensor parallel",
        "2-D (2, 4)",
        "2-D (4, 2)",
    ]
    for name in st.STRATEGIES:
        assert st.strategy_mesh(name).size == 8


def test_a_rule_matches_the_weight_and_its_adam_moments():
    model, optimizer = fresh()
    state = nnx.state((model, optimizer))
    found = {
        jax.tree_util.keystr(path, simple=True, separator="."): st.spec_for(
            path, st.FSDP
        )
        for path, _ in jax.tree.leaves_with_path(state)
    }
    assert found["0.up.kernel.value"] == P("data", None)
    assert found["1.opt_state.0.mu.up.kernel.value"] == P("data", None)
    assert found["1.opt_state.0.nu.down.kernel.value"] == P(None, "data")
    assert found["1.opt_state.0.count.value"] == P()
    assert found["1.step.value"] == P()


@pytest.mark.parametrize("name", list(st.STRATEGIES))
def test_weights_and_adam_state_follow_the_rules(name):
    model, optimizer = fresh()
    before = by_name(nnx.state(model, nnx.Param), np.asarray)
    st.place_state(name, model, optimizer)
    rules = st.STRATEGIES[name][2]
    want = {
        k: rules.get(k, P())
        for k in ("up.kernel", "up.bias", "down.kernel", "down.bias")
    }
    assert specs_by_name(nnx.state(model, nnx.Param)) == want
    adam = optimizer.opt_state[0]
    assert specs_by_name(adam.mu) == want
    assert specs_by_name(adam.nu) == want
    assert adam.count[...].sharding.spec == P()
    mesh = st.strategy_mesh(name)
    for leaf in jax.tree.leaves(nnx.state((model, optimizer))):
        assert leaf.sharding.mesh == mesh
    after = by_name(nnx.state(model, nnx.Param), np.asarray)
    for k in before:  # placing moves the values, it does not change them
        np.testing.assert_array_equal(after[k], before[k])


def test_the_fsdp_block_shows_the_placement(capsys):
    model, _optimizer, _x, y = st.place_fsdp()
    assert capsys.readouterr().out.splitlines() == [
        "up.kernel:    float32[32,128] P('data', None)",
        "its Adam mu:  P('data', None)",
        "down.kernel:  P(None, 'data')",
        "x:            P('data',) rows per device: 8",
    ]
    assert {s.data.shape for s in model.up.kernel[...].addressable_shards} == {(4, 128)}
    assert {s.data.shape for s in model.down.kernel[...].addressable_shards} == {
        (128, 1)
    }
    assert y.sharding.spec == P("data")


def test_tensor_parallel_gives_every_device_the_whole_batch():
    x = np.arange(64 * 32, dtype=np.float32).reshape(64, 32)
    xb, _yb = st.place_batch("tensor parallel", x, x[:, :8])
    assert {s.data.shape for s in xb.addressable_shards} == {(64, 32)}
    xb, _ = st.place_batch("2-D (4, 2)", x, x[:, :8])
    assert {s.data.shape for s in xb.addressable_shards} == {(16, 32)}
    np.testing.assert_array_equal(xb, x)


def test_sizes_that_do_not_divide_are_refused(capsys):
    x = np.zeros((64, 32), np.float32)
    st.bad_sizes(x, x[:, :8])
    assert capsys.readouterr().out.splitlines() == [
        "ValueError: down.kernel has shape (100, 8): its dimension of 100 cannot be "
        "split over the 8 devices of mesh axis 'model'. Make it a multiple of 8, or "
        "use a smaller 'model' axis.",
        "ValueError: a batch of 60 cannot be split over the 8 devices of mesh axis "
        "'data': use a batch that is a multiple of 8.",
    ]


def test_fsdp_refuses_a_hidden_size_that_data_does_not_divide():
    def build():
        model = MLP(D_IN, 100, D_OUT, rngs=nnx.Rngs(0))
        return model, nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)

    with pytest.raises(ValueError, match=r"^up\.bias has shape \(100,\)"):
        st.place_state("FSDP", *nnx.eval_shape(build))
