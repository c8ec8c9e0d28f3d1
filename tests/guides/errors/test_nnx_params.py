import pytest
from flax import nnx
from jax import P

from snippets.guides.errors import nnx_params


def test_annotated_parameters_without_a_mesh(devices, capsys):
    nnx_params.without_mesh()
    assert capsys.readouterr().out == (
        "ValueError: An auto mesh context or metadata is required if creating a variable "
        "with annotation out_sharding=P(None, 'x'). For more guidance, see "
        "https://flax.readthedocs.io/en/latest/flip/4844-var-eager-sharding.html.\n"
    )


def test_under_set_mesh_the_kernel_is_split(line_mesh, capsys):
    kernel_init = nnx.with_partitioning(nnx.initializers.lecun_normal(), (None, "x"))
    layer = nnx_params.under_mesh(line_mesh, kernel_init)
    kernel = layer.kernel[...]
    assert kernel.shape == (4, 8)
    assert kernel.sharding.spec == P(None, "x")
    assert {s.data.shape for s in kernel.addressable_shards} == {(4, 1)}
    assert capsys.readouterr().out == "float32[4,8@x] each device holds (4, 1)\n"
    with pytest.raises(
        ValueError, match="An auto mesh context or metadata is required"
    ):
        nnx.Linear(4, 8, kernel_init=kernel_init, rngs=nnx.Rngs(0))
