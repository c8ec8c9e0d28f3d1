import re

import jax
import numpy as np
import pytest
from jax import P
from jax.sharding import Mesh, NamedSharding

from snippets.advanced.manual_control import collective_matmul as cm
from snippets.hlo import count_collectives

MATMULS = (cm.gather_matmul, cm.ring_matmul)


@pytest.fixture(scope="module")
def compiled(line_data, operands):
    return cm.compare(line_data[0], *operands)


def result_shapes(hlo: str, op: str) -> list[str]:
    return re.findall(rf"= (\S+) {op}(?:-start)?\(", hlo)


def test_both_equal_the_unsharded_product(line_data, operands, capsys):
    line, (a, b) = line_data[0], operands
    capsys.readouterr()
    cm.compare(line, a, b)
    expected = np.asarray(a) @ np.asarray(b)
    for matmul in MATMULS:
        product = matmul(a, b, line)
        np.testing.assert_allclose(product, expected, rtol=1e-5, atol=1e-5)
        assert product.sharding.spec == P(None, "x")
        assert {s.data.shape for s in product.addressable_shards} == {(64, 4)}
    assert capsys.readouterr().out.splitlines() == [
        "-- gather_matmul: float32[64,32@x], equal to a @ b: True",
        "all-gather          1",
        "-- ring_matmul: float32[64,32@x], equal to a @ b: True",
        "collective-permute  7",
    ]


def test_the_operands_layout(operands):
    a, b = operands
    assert a.sharding.spec == P("x", None) and b.sharding.spec == P(None, "x")


def test_the_ring_replaces_the_all_gather_by_permutes(compiled):
    gather = compiled["gather_matmul"].as_text()
    ring = compiled["ring_matmul"].as_text()
    assert count_collectives(compiled["gather_matmul"]) == {"all-gather": 1}
    assert count_collectives(compiled["ring_matmul"]) == {"collective-permute": 7}
    # Each device receives the same rows of a either way: the all-gather's result holds all 64,
    # the ring's 7 permutes bring one (8, 16) block each; no (64, 16) array exists in the ring.
    assert result_shapes(gather, "all-gather") == ["f32[64,16]{1,0}"]
    assert result_shapes(ring, "collective-permute") == ["f32[8,16]{1,0}"] * 7
    assert "f32[64,16]" not in ring
    pairs = re.findall(r"source_target_pairs=(\{[\d{},]*\})", ring)
    assert set(pairs) == {"{{0,1},{1,2},{2,3},{3,4},{4,5},{5,6},{6,7},{7,0}}"}


def test_the_cpu_permutes_are_synchronous(compiled, capsys):
    capsys.readouterr()
    cm.synchronous(compiled)
    assert capsys.readouterr().out.splitlines() == [
        "synchronous collective-permute: 7",
        "asynchronous start/done pairs:  0",
    ]


def test_the_ring_works_on_other_ring_sizes_and_shapes(devices):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((12, 5), np.float32)
    b = rng.standard_normal((5, 9), np.float32)
    for n in (1, 3):
        mesh = jax.make_mesh((n,), ("x",), devices=devices[:n])
        a_placed = jax.device_put(a, NamedSharding(mesh, P("x", None)))
        b_placed = jax.device_put(b, NamedSharding(mesh, P(None, "x")))
        for matmul in MATMULS:
            product = matmul(a_placed, b_placed, mesh)
            np.testing.assert_allclose(product, a @ b, rtol=1e-5, atol=1e-5)


def test_the_ring_runs_over_x_on_a_two_axis_mesh(mesh, devices):
    # The tests' shared 2 x 4 mesh names its axes ("x", "y"): the ring runs over "x" only.
    rng = np.random.default_rng(3)
    a = rng.standard_normal((8, 6), np.float32)
    b = rng.standard_normal((6, 4), np.float32)
    a_placed = jax.device_put(a, NamedSharding(mesh, P("x", None)))
    b_placed = jax.device_put(b, NamedSharding(mesh, P(None, "x")))
    for matmul in MATMULS:
        np.testing.assert_allclose(
            matmul(a_placed, b_placed, mesh), a @ b, rtol=1e-5, atol=1e-5
        )


@pytest.mark.parametrize("axis_type", ["explicit", "auto"])
def test_both_lower_from_shape_dtype_structs(devices, axis_type):
    # What the TPU driver does: a Mesh built from a device array (Auto axes), and abstract
    # arguments that carry their NamedSharding.
    if axis_type == "auto":
        mesh = Mesh(np.array(devices), ("x",))
    else:
        mesh = jax.make_mesh((8,), ("x",))

    def abstract(shape, spec):
        return jax.ShapeDtypeStruct(
            shape, np.float32, sharding=NamedSharding(mesh, spec)
        )

    x = abstract((256, 64), P("x", None))
    w = abstract((64, 128), P(None, "x"))
    assert count_collectives(cm.gather_matmul.lower(x, w, mesh).compile()) == {
        "all-gather": 1
    }
    assert count_collectives(cm.ring_matmul.lower(x, w, mesh=mesh).compile()) == {
        "collective-permute": 7
    }


@pytest.mark.parametrize(
    ("a_shape", "b_shape", "axes", "message"),
    [
        ((64, 16), (16, 32), ("y",), "The ring runs over a mesh axis named 'x'"),
        ((64, 16, 1), (16, 32), ("x",), r"x @ w needs shapes \(m, k\) and \(k, n\)"),
        ((64, 16), (8, 32), ("x",), r"x @ w needs shapes \(m, k\) and \(k, n\)"),
        ((60, 16), (16, 32), ("x",), "must both be multiples of 8"),
        ((64, 16), (16, 30), ("x",), "must both be multiples of 8"),
    ],
)
def test_shapes_and_meshes_that_do_not_fit_are_refused(
    devices, a_shape, b_shape, axes, message
):
    mesh = jax.make_mesh((8,), axes)
    a = jax.ShapeDtypeStruct(a_shape, np.float32)
    b = jax.ShapeDtypeStruct(b_shape, np.float32)
    for matmul in MATMULS:
        with pytest.raises(ValueError, match=message):
            matmul.lower(a, b, mesh)
