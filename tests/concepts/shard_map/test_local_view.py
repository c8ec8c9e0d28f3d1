import jax
import numpy as np
from jax import P
from jax.sharding import AxisType

from snippets.concepts.shard_map import local_view


def test_x_is_split_two_numbers_per_device(capsys):
    mesh, x = local_view.build_data()
    assert mesh.axis_types == (AxisType.Explicit,) and dict(mesh.shape) == {"x": 8}
    assert x.sharding.spec == P("x")
    for shard in x.addressable_shards:
        i = shard.device.id
        np.testing.assert_array_equal(shard.data, [2.0 * i, 2.0 * i + 1])
    assert capsys.readouterr().out.splitlines()[0] == "float32[16@x]"


def test_the_body_sees_one_block_and_is_traced_once(line_mesh, capsys):
    _, x = local_view.build_data()
    capsys.readouterr()
    doubled = local_view.local_shapes(line_mesh, x)
    np.testing.assert_array_equal(doubled, np.arange(16.0) * 2)
    assert doubled.sharding.spec == P("x")
    assert {s.data.shape for s in doubled.addressable_shards} == {(2,)}
    assert capsys.readouterr().out.splitlines() == [
        "the body sees (2,) float32[2]{V:x}",  # once, not once per device
        "the caller gets (16,) float32[16@x]",
        "same as x * 2: True",
    ]


def test_debug_print_runs_on_every_device_with_its_block(line_mesh, capsys):
    _, x = local_view.build_data()
    capsys.readouterr()
    same = local_view.debug_print(line_mesh, x)
    np.testing.assert_array_equal(same, x)
    lines = capsys.readouterr().out.splitlines()
    # Devices print asynchronously: compare as a set, not in order.
    assert sorted(lines) == sorted(
        f"device {i} holds {np.arange(2.0 * i, 2.0 * i + 2)}" for i in range(8)
    )
    assert str(jax.typeof(same)) == "float32[16@x]"
