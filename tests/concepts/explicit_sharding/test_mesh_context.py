import jax
import numpy as np

from snippets.concepts.explicit_sharding import contraction, mesh_context

X = np.arange(32.0).reshape(8, 4)
W = np.arange(32.0).reshape(4, 8)


def test_a_bare_spec_needs_a_mesh_in_context(capsys):
    mesh_context.without_a_mesh()
    assert capsys.readouterr().out == (
        "ValueError: Please set a mesh via `jax.set_mesh` if a PartitionSpec is "
        "passed to device_put\n"
    )


def test_under_set_mesh_a_bare_spec_is_enough(x, explicit_mesh, capsys):
    w = contraction.ambiguous(x, explicit_mesh)
    capsys.readouterr()
    v, xw, rows = mesh_context.with_a_mesh(x, w, explicit_mesh)
    np.testing.assert_array_equal(v, np.arange(8.0))
    np.testing.assert_array_equal(xw, X @ W)
    np.testing.assert_array_equal(rows, X)
    assert v.sharding.mesh == explicit_mesh
    assert [str(jax.typeof(a)) for a in (v, xw, rows)] == [
        "float32[8@x]",
        "float32[8@x,8]",
        "float32[8@x,4]",
    ]
    assert capsys.readouterr().out.splitlines() == [
        "  inside jit: AbstractMesh('x': 2, 'y': 4, axis_types=(Explicit, Explicit), "
        "device_kind=cpu, num_cores=None, platform=cpu)",
        "v:    float32[8@x]",
        "xw:   float32[8@x,8]",
        "rows: float32[8@x,4]",
        "after the with block: AbstractMesh((), axis_types=())",
    ]
    assert jax.sharding.get_abstract_mesh().empty
