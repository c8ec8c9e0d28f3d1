import re
from pathlib import Path

import jax
import numpy as np
import pytest
from flax import nnx
from jax import P
from jax.sharding import AxisType

from snippets.advanced.transformer import init
from snippets.advanced.transformer.model import Config, Transformer, mesh_axes
from snippets.hlo import count_collectives

PAGE = Path(__file__).resolve().parents[3] / "docs" / "advanced" / "transformer.md"

# The rules' layout of every parameter on the 2 x 2 x 2 mesh: spec, and one device's block.
EXPECTED = {
    "embed": (P("tensor", "fsdp"), (64, 32), (32, 16)),
    "final_norm": (P("fsdp"), (32,), (16,)),
    "head": (P("fsdp", "tensor"), (32, 64), (16, 32)),
    "layers/attn_norm": (P(None, "fsdp"), (2, 32), (2, 16)),
    "layers/down": (P(None, "tensor", "fsdp"), (2, 128, 32), (2, 64, 16)),
    "layers/kv": (
        P(None, None, "fsdp", "tensor", None),
        (2, 2, 32, 4, 8),
        (2, 2, 16, 2, 8),
    ),
    "layers/mlp_norm": (P(None, "fsdp"), (2, 32), (2, 16)),
    "layers/out": (P(None, "tensor", None, "fsdp"), (2, 4, 8, 32), (2, 2, 8, 16)),
    "layers/q": (P(None, "fsdp", "tensor", None), (2, 32, 4, 8), (2, 16, 2, 8)),
    "layers/up": (P(None, "fsdp", "tensor"), (2, 32, 128), (2, 16, 64)),
}


def flat(tree):
    """{"a/b": array} for every array of an nnx.State."""
    return {"/".join(map(str, p)): v.get_value() for p, v in nnx.to_flat_state(tree)}


def test_the_mesh_has_three_auto_axes_of_two(mesh):
    assert dict(mesh.shape) == {"data": 2, "fsdp": 2, "tensor": 2}
    assert mesh.axis_types == (AxisType.Auto,) * 3


@pytest.mark.parametrize("shape", [(3, 3, 1), (2, 4), (0, 2, 2), (4, 4, 1)])
def test_a_mesh_that_does_not_fit_the_devices_is_refused(shape):
    with pytest.raises(ValueError, match=r"Give three sizes >= 1 that fit the devices"):
        init.build_mesh(shape)


def test_every_parameter_has_its_rule_spec_and_block(state):
    params = flat(state["model"])
    assert params.keys() == EXPECTED.keys()
    for name, (spec, shape, block) in EXPECTED.items():
        array = params[name]
        assert array.dtype == np.float32, name
        assert array.shape == shape, name
        assert array.sharding.spec == spec, name
        assert {s.data.shape for s in array.addressable_shards} == {block}, name


def test_adams_moments_are_laid_out_like_the_parameters(state):
    adam = state["optimizer"]["opt_state"][0]
    for moment in ("mu", "nu"):
        arrays = flat(adam[moment])
        assert arrays.keys() == EXPECTED.keys()
        for name, (spec, _, block) in EXPECTED.items():
            assert arrays[name].sharding.spec == spec, (moment, name)
            shards = {s.data.shape for s in arrays[name].addressable_shards}
            assert shards == {block}, (moment, name)
            np.testing.assert_array_equal(arrays[name], 0)
    for counter in (adam["count"][...], state["optimizer"]["step"][...]):
        assert counter.sharding.spec == P() and counter.shape == ()


def test_flax_applies_the_same_table_as_mesh_axes(sharded):
    """nnx.get_named_sharding under nnx.logical_axis_rules == mesh_axes of each name."""
    with nnx.use_eager_sharding(False):
        abstract = nnx.eval_shape(lambda: Transformer(Config(), rngs=nnx.Rngs(0)))
    specs = {
        "/".join(map(str, path)): mesh_axes(node.get_metadata()["out_sharding"])
        for path, node in nnx.iter_graph(abstract)
        if isinstance(node, nnx.Param)
    }
    model = flat(sharded.abstract["model"])
    assert {name: model[name].sharding.spec for name in specs} == specs


def test_init_creates_what_the_abstract_state_describes(sharded, state):
    abstract = jax.tree.leaves(sharded.abstract)
    arrays = jax.tree.leaves(state)
    assert len(abstract) == len(arrays) == 32
    for a, x in zip(abstract, arrays, strict=True):
        assert (x.shape, x.dtype) == (a.shape, a.dtype)
        assert x.sharding == a.sharding


def test_the_stacked_layers_start_different(state):
    up = np.asarray(state["model"]["layers"]["up"][...])
    assert not np.allclose(up[0], up[1])


def test_init_gives_the_same_values_each_time(sharded, state):
    """The page's comparisons start from a second init(): it must repeat the first."""
    again = sharded.init()
    for a, b in zip(jax.tree.leaves(state), jax.tree.leaves(again), strict=True):
        np.testing.assert_array_equal(a, b)


def test_the_printed_table_lists_every_parameter(made):
    rows = [re.split(r"\s{2,}", line.strip()) for line in made[1].splitlines()]
    assert rows[0] == ["variable", "shape", "spec", "per device"]
    expected = [
        [f"model/{name}", str(shape), str(spec), str(block)]
        for name, (spec, shape, block) in EXPECTED.items()
    ]
    assert rows[1:] == expected


def test_on_explicit_axes_the_same_init_draws_every_array_whole(cfg, sharded):
    """The page: compiled on Explicit axes, init's temporaries are more than three times
    the parameters (Flax's layout is a reshard of finished arrays there), which is why the
    Explicit section creates the state on Auto axes and moves it."""
    mesh_x = init.build_mesh(kind=AxisType.Explicit)
    sharded_x = init.sharded_init(cfg, mesh_x)
    with jax.set_mesh(mesh_x):
        compiled = sharded_x.init.lower().compile()
    params = jax.tree.leaves(nnx.filter_state(sharded.abstract, nnx.Param))
    whole = sum(p.size * p.dtype.itemsize for p in params)
    assert compiled.memory_analysis().temp_size_in_bytes > 3 * whole
    text = " ".join(PAGE.read_text().split())
    assert "with temporaries more than three times the parameters" in text
    assert (
        "In the program that `init` compiles to for the CPU backend on these `Auto` axes"
        in text
    )


def test_init_never_holds_the_whole_model_on_one_device(sharded):
    """The page: a device's temporaries are smaller than the parameters alone, and no
    collective moves anything (each device computes its own blocks)."""
    compiled = sharded.init.lower().compile()
    assert count_collectives(compiled) == {}
    params = jax.tree.leaves(nnx.filter_state(sharded.abstract, nnx.Param))
    whole = sum(p.size * p.dtype.itemsize for p in params)
    assert whole == 115_328  # float32 parameters, all of them whole
    assert 0 < compiled.memory_analysis().temp_size_in_bytes < whole
    # What each device writes is its own blocks: 86,984 bytes of the 345,992.
    report = compiled.memory_analysis()
    leaves = len(jax.tree.leaves(sharded.abstract))
    assert (
        report.output_size_in_bytes == 86_984 + 8 * leaves
    )  # and a pointer per output


def test_check_layout_accepts_the_pages_model(mesh):
    with nnx.use_eager_sharding(False):
        abstract = nnx.eval_shape(lambda: Transformer(Config(), rngs=nnx.Rngs(0)))
    assert init.check_layout(abstract, mesh) is None
