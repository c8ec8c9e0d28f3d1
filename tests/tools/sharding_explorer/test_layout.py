"""`layout`: each device's block, checked against the arrays JAX actually places; its bytes;
JAX's errors as the explorer shows them; and what it refuses to be asked."""

import contextlib
import io

import jax
import numpy as np
import pytest
from jax import P
from jax.sharding import NamedSharding

from snippets.tools.sharding_explorer import layout as module
from snippets.tools.sharding_explorer.layout import layout

CASES = [
    ((16, 8), (8,), ("x",), ("x", None)),
    ((8, 6, 4), (2, 4), ("x", "y"), ("x", None, "y")),
    ((16, 8), (2, 4), ("x", "y"), (("y", "x"), None)),
    ((4, 8, 2, 8), (2, 2, 2), ("a", "b", "c"), (None, ("c", "a"), None, "b")),
    ((6,), (2, 4), ("x", "y"), (None,)),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_each_block_is_the_part_of_the_array_jax_puts_on_that_device(devices, case):
    shape, mesh_shape, names, spec = case
    found = layout(shape, mesh_shape, names, spec)
    mesh = jax.make_mesh(mesh_shape, names, devices=devices[: np.prod(mesh_shape)])
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    placed = jax.device_put(x, NamedSharding(mesh, P(*spec)))
    by_id = {s.device.id: np.asarray(s.data) for s in placed.addressable_shards}
    for device, block in zip(np.ravel(mesh.devices), found["blocks"], strict=True):
        expected = x[tuple(slice(a, b) for a, b in block)]
        np.testing.assert_array_equal(by_id[device.id], expected)
        assert by_id[device.id].nbytes == found["bytes"]
        assert list(expected.shape) == found["block"]


@pytest.mark.parametrize(
    ("dtype", "itemsize"), [("float32", 4), ("bfloat16", 2), ("int8", 1)]
)
def test_bytes_follow_the_dtype(devices, dtype, itemsize):
    found = layout((16, 8), (8,), ("x",), ("x", None), dtype)
    assert found["bytes"] == 2 * 8 * itemsize


def test_a_spec_jax_refuses_comes_back_as_jaxs_own_error(devices):
    mesh = jax.make_mesh((2, 4), ("x", "y"), devices=devices)
    for shape, spec in (((6, 4), ("y", None)), ((4, 4), ("x", "x"))):
        with pytest.raises(Exception) as raised:
            NamedSharding(mesh, P(*spec)).shard_shape(shape)
        error = layout(shape, (2, 4), ("x", "y"), spec)["error"]
        assert error == f"{type(raised.value).__name__}: {raised.value}"
        assert type(raised.value).__name__ in ("IndivisibleError", "DuplicateSpecError")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (((), (8,), ("x",), ()), "1 to 4 positive sizes"),
        (((2, 2, 2, 2, 2), (8,), ("x",), (None,) * 5), "1 to 4 positive sizes"),
        (((8, 0), (8,), ("x",), (None, None)), "1 to 4 positive sizes"),
        (((8,), (2, 4), ("x",), (None,)), "one name per size"),
        (((8,), (2, 2, 2, 2), ("a", "b", "c", "d"), (None,)), "1 to 3 mesh axes"),
        (((8,), (16,), ("x",), (None,)), "set jax_num_cpu_devices"),
    ],
)
def test_what_cannot_be_asked_says_what_to_change(devices, args, says):
    with pytest.raises(ValueError, match=says):
        layout(*args)


def test_an_unknown_dtype_names_the_ones_it_knows(devices):
    with pytest.raises(ValueError, match=r"\['float32', 'bfloat16', 'int8'\]"):
        layout((8,), (8,), ("x",), ("x",), "float64")


def test_the_page_prints_one_case_and_one_error(devices):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        found = module.show_one()
    lines = out.getvalue().splitlines()
    assert lines[0] == f"block per device: {found['block']}  bytes: {found['bytes']}"
    assert found["block"] == [4, 6, 1] and found["bytes"] == 4 * 6 * 1 * 4
    assert lines[1:4] == [f"device {d}: {found['blocks'][d]}" for d in range(3)]
    assert lines[4].startswith(
        "IndivisibleError: NamedSharding(mesh=Mesh('x': 2, 'y': 4"
    )
