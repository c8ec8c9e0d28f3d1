import jax
import numpy as np
import pytest
from jax import P
from jax.sharding import NamedSharding

from snippets.advanced.shapes_and_randomness import memories
from tests.advanced.shapes_and_randomness.conftest import quietly


def test_a_cpu_device_lists_three_memory_kinds(devices, capsys):
    assert memories.memory_kinds() == ["device", "pinned_host", "unpinned_host"]
    assert capsys.readouterr().out == (
        "cpu:0 can hold arrays in: ['device', 'pinned_host', 'unpinned_host']\n"
        "default: device\n"
        "memory_stats(): None\n"
    )
    for device in devices:  # every device, not only the first
        assert {m.kind for m in device.addressable_memories()} == {
            "device",
            "pinned_host",
            "unpinned_host",
        }


def test_device_put_moves_arrays_between_kinds(page_mesh, capsys):
    x, moved = memories.move_between(page_mesh)
    assert x.sharding.memory_kind == "device"
    for kind, array in moved.items():
        assert array.sharding.memory_kind == kind
        assert array.sharding.spec == P("x")
        assert {s.data.shape for s in array.addressable_shards} == {(2,)}
        np.testing.assert_array_equal(array, np.arange(16.0))
    assert str(jax.typeof(moved["pinned_host"])) == "float32<host>[16@x]"
    assert str(jax.typeof(moved["unpinned_host"])) == "float32[16@x]"
    assert [line.split() for line in capsys.readouterr().out.splitlines()] == [
        ["pinned_host", "float32<host>[16@x]", "pinned_host"],
        ["unpinned_host", "float32[16@x]", "unpinned_host"],
        ["device", "float32[16@x]", "device"],
    ]


def test_a_jitted_function_takes_host_arrays_on_cpu(page_mesh, capsys):
    _, moved = quietly(memories.move_between, page_mesh)
    results = memories.compute_on_host(moved)
    assert results["pinned_host"].sharding.memory_kind == "pinned_host"
    assert results["unpinned_host"].sharding.memory_kind == "device"
    for result in results.values():
        np.testing.assert_array_equal(result, 2 * np.arange(16.0))
    assert capsys.readouterr().out == (
        "2 * pinned_host array: float32<host>[16@x] in pinned_host\n"
        "2 * unpinned_host array: float32[16@x] in device\n"
    )


def test_a_kind_the_cpu_lacks_is_refused(page_mesh):
    with pytest.raises(ValueError, match="Got memory kind: hbm"):
        NamedSharding(page_mesh, P(), memory_kind="hbm")
