from pathlib import Path

import jax
import numpy as np
from flax import nnx
from jax import P
from jax.sharding import AxisType

from snippets import models
from snippets.hlo import count_collectives
from snippets.training.sharding_parameters import annotations

from .test_path_rules import table_rows

PAGE = (
    Path(__file__).resolve().parents[3] / "docs" / "training" / "sharding-parameters.md"
)


def prose() -> str:
    return " ".join(PAGE.read_text().split())


def test_without_a_mesh_the_annotated_model_cannot_be_created(capsys):
    annotations.without_mesh()
    assert capsys.readouterr().out == (
        "ValueError: An auto mesh context or metadata is required if creating a "
        "variable with annotation out_sharding=P(None, 'model'). For more guidance, "
        "see https://flax.readthedocs.io/en/latest/flip/4844-var-eager-sharding.html.\n"
    )


def test_under_set_mesh_each_parameter_is_placed_as_annotated(run):
    # down/bias, down/kernel, up/bias, up/kernel, as created
    specs = [sharding.spec for sharding, _ in run.initial]
    assert specs == [P(None), P("model", None), P("model"), P(None, "model")]
    assert {sharding.mesh for sharding, _ in run.initial} == {run.mesh}
    assert table_rows(run.annotated_out) == [
        ["down/bias", "(8,)", "P(None,)", "(8,)"],
        ["down/kernel", "(128, 8)", "P('model', None)", "(32, 8)"],
        ["up/bias", "(128,)", "P('model',)", "(32,)"],
        ["up/kernel", "(32, 128)", "P(None, 'model')", "(32, 32)"],
    ]


def test_the_same_layout_and_values_as_the_rules(run):
    pairs = zip(run.initial, jax.tree.leaves(nnx.state(run.model)), strict=True)
    for (sharding, value), b in pairs:
        assert sharding.is_equivalent_to(b.sharding, b.ndim)
        np.testing.assert_array_equal(value, b)


def test_get_partition_spec_reads_annotations_not_placement(run):
    assert run.specs_out.splitlines() == [
        "parameter    AnnotatedMLP       MLP sharded by rules",
        "up/kernel    P(None, 'model')   P()",
        "up/bias      P('model',)        P()",
        "down/kernel  P('model', None)   P()",
        "same initial values as the MLP: True",
    ]
    specs = jax.tree.leaves(
        nnx.get_partition_spec(nnx.state(run.model)),
        is_leaf=lambda x: isinstance(x, P),
    )
    assert specs == [P()] * 4


def test_with_partitioning_can_take_the_mesh_instead_of_a_context(run):
    """The page's other way to supply a mesh: mesh= on with_partitioning."""
    init = nnx.with_partitioning(
        nnx.initializers.lecun_normal(), (None, "model"), mesh=run.mesh
    )
    layer = nnx.Linear(models.D_IN, models.D_HIDDEN, kernel_init=init, rngs=nnx.Rngs(0))
    assert layer.kernel[...].sharding.spec == P(None, "model")


def test_eagerly_the_initializer_makes_the_whole_array_on_every_device(run, capsys):
    """The page: Flax lays out what the initializer returns, which eagerly is the whole
    array on every device of the mesh."""
    layer = annotations.made_whole(run.mesh)
    assert capsys.readouterr().out.splitlines() == [
        "initializer made (32, 128); its 8 devices each hold {(32, 128)}",
        "then Flax lays it out as P(None, 'model'): device 0 keeps (32, 32)",
    ]
    assert layer.kernel[...].sharding.spec == P(None, "model")
    assert 'is not "never whole"' in prose()


def compiled_creation(kind):
    """An annotated 1,024 x 8,192 kernel, created in a jitted function on the page's
    2 x 4 mesh with axes of `kind`: (its block per device, the whole, the program)."""
    mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(kind, kind))

    def create():
        init = nnx.with_partitioning(nnx.initializers.lecun_normal(), (None, "model"))
        layer = nnx.Linear(
            1024, 8192, use_bias=False, kernel_init=init, rngs=nnx.Rngs(0)
        )
        return nnx.state(layer)

    with jax.set_mesh(mesh):
        compiled = jax.jit(create).lower().compile()
    whole = 1024 * 8192 * 4
    return whole // 4, whole, compiled


def test_compiled_on_auto_axes_each_device_draws_its_block():
    block, whole, compiled = compiled_creation(AxisType.Auto)
    memory = compiled.memory_analysis()
    assert memory.output_size_in_bytes == block
    assert count_collectives(compiled) == {}
    # "temporaries of three times a device's block, less than the whole kernel"
    assert 3 * block <= memory.temp_size_in_bytes < 3 * block + 4096
    assert memory.temp_size_in_bytes < whole
    assert "temporaries of three times a device's block, less than the whole" in prose()


def test_compiled_on_explicit_axes_every_device_draws_the_whole_kernel():
    block, whole, compiled = compiled_creation(AxisType.Explicit)
    memory = compiled.memory_analysis()
    assert memory.output_size_in_bytes == block
    # "temporaries of four times the whole kernel"
    assert 4 * whole <= memory.temp_size_in_bytes < 4 * whole + 4096
    assert "temporaries of four times the whole kernel" in prose()
