import re

import jax
import numpy as np
import pytest
from jax import P

from snippets.concepts.three_approaches import layer


@pytest.fixture(scope="module")
def data():
    return layer.make_data()


def test_the_data_and_the_numpy_reference(data, capsys):
    x, W, b, reference = data
    assert (x.shape, W.shape, b.shape) == ((32,), (32, 4), (4,))
    assert {x.dtype, W.dtype, b.dtype} == {np.dtype(np.float32)}
    np.testing.assert_allclose(reference, 1 / (1 + np.exp(-(x @ W + b))), rtol=1e-6)
    # Spread out enough that a wrong sum would show.
    assert reference.min() < 0.01 and reference.max() > 0.8


def test_dense_on_one_device_matches_numpy(data):
    x, W, b, reference = data
    np.testing.assert_allclose(layer.dense(x, W, b), reference, rtol=1e-6)


def test_place_layer_splits_the_contracting_dimension(data, line_mesh):
    x, W, b, _ = data
    x_s, W_s, b_s = layer.place_layer(line_mesh, x, W, b)
    assert (x_s.sharding.spec, W_s.sharding.spec, b_s.sharding.spec) == (
        P("x"),
        P("x", None),
        P(),
    )
    assert {s.data.shape for s in x_s.addressable_shards} == {(4,)}
    assert {s.data.shape for s in W_s.addressable_shards} == {(4, 4)}
    assert b_s.sharding.is_fully_replicated
    # Each device's rows of W meet the same entries of x.
    for xs, ws in zip(x_s.addressable_shards, W_s.addressable_shards, strict=True):
        assert xs.device == ws.device and xs.index[0] == ws.index[0]
    assert [str(jax.typeof(a)) for a in (x_s, W_s, b_s)] == [
        "float32[32@x]",
        "float32[32@x,4]",
        "float32[4]",
    ]


def test_place_layer_names_what_to_change(data, line_mesh, mesh):
    x, W, b, _ = data
    with pytest.raises(
        ValueError,
        match=re.escape("The mesh has axes ('rows',); this needs one named 'x'."),
    ):
        rows_mesh = jax.make_mesh(
            (8,), ("rows",), axis_types=(jax.sharding.AxisType.Explicit,)
        )
        layer.place_layer(rows_mesh, x, W, b)
    with pytest.raises(
        ValueError,
        match=re.escape(
            "x must be a vector with one entry per row of W; got x of shape (30,) "
            "and W of shape (32, 4)."
        ),
    ):
        layer.place_layer(line_mesh, x[:30], W, b)
    with pytest.raises(ValueError, match=r"got x of shape \(2, 32\)"):
        layer.place_layer(line_mesh, np.stack([x, x]), W, b)
    with pytest.raises(
        ValueError,
        match=re.escape(
            "12 inputs do not split over the 8 devices of axis 'x': use a multiple "
            "of 8 inputs, or a mesh whose 'x' divides 12."
        ),
    ):
        layer.place_layer(line_mesh, x[:12], W[:12], b)
    # On the 2 x 4 mesh axis "x" has 2 devices: 32 inputs split, 16 rows of W each.
    _, W_2, _ = layer.place_layer(mesh, x, W, b)
    assert {s.data.shape for s in W_2.addressable_shards} == {(16, 4)}
