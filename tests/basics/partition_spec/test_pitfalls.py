import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import P
from jax.sharding import AxisType, NamedSharding

from snippets.basics.partition_spec import pitfalls

RANK_MESSAGE = (
    "is only valid for values of rank at least 2, but was applied to a value of rank 1."
)


LENGTH_MESSAGE = "Length of sharding.spec (2) must be equal to aval's ndim (1)."


def test_a_spec_longer_than_the_array_names_both_lengths_outside_jit(mesh, capsys):
    vector = pitfalls.too_long_eager(mesh)
    np.testing.assert_array_equal(vector, np.arange(8.0))
    out = capsys.readouterr().out
    assert out.startswith(f"ValueError: {LENGTH_MESSAGE} Got sharding.spec P('x', 'y')")


def test_inside_jit_the_same_mistake_is_explained(mesh, capsys):
    pitfalls.too_long_in_jit(mesh, np.arange(8.0))
    out = capsys.readouterr().out
    assert out.startswith("ValueError: One of pjit outputs")
    assert out.rstrip().endswith(RANK_MESSAGE)


def test_extra_none_entries_are_refused_too(mesh, capsys):
    pitfalls.too_long_with_none(mesh, np.arange(8.0))
    out = capsys.readouterr().out
    assert out.startswith(
        f"ValueError: {LENGTH_MESSAGE} Got sharding.spec P('x', None)"
    )


def test_one_entry_per_dimension_fits(mesh, capsys):
    fits = pitfalls.too_long_fixed(mesh, np.arange(8.0))
    expected = [
        (P("x"), (4,), np.arange(8.0)),
        (P(("x", "y")), (1,), np.arange(8.0)),
        (P("x", "y"), (1, 1), np.arange(8.0).reshape(2, 4)),
    ]
    for placed, (spec, block, values) in zip(fits, expected, strict=True):
        assert placed.sharding.spec == spec
        assert {s.data.shape for s in placed.addressable_shards} == {block}
        np.testing.assert_array_equal(placed, values)
    assert capsys.readouterr().out.splitlines() == [
        "float32[8@x]      each device holds (4,)",
        "float32[8@(x,y)]  each device holds (1,)",
        "float32[2@x,4@y]  each device holds (1, 1)",
    ]


def test_a_dimension_the_devices_do_not_divide(capsys):
    mesh8, batch = pitfalls.indivisible()
    assert dict(mesh8.shape) == {"x": 8}
    np.testing.assert_array_equal(batch, np.arange(6.0))
    out = capsys.readouterr().out
    assert out.startswith(
        "ValueError: Sharding spec ('x',) implies that array axis 0 is partitioned 8 times, "
        "but does not evenly divide the dimension size 6."
    )
    assert "AbstractMesh('x': 8" in out


def test_padding_to_a_multiple_with_a_mask_keeps_the_real_mean(line_mesh, capsys):
    padded, real, mean = pitfalls.pad_to_a_multiple(line_mesh, np.arange(6.0))
    np.testing.assert_array_equal(padded, np.pad(np.arange(6.0), (0, 2)))
    np.testing.assert_array_equal(real, np.arange(8) < 6)
    assert padded.sharding.spec == P("x") and real.sharding.spec == P("x")
    assert {s.data.shape for s in padded.addressable_shards} == {(1,)}
    assert float(mean) == np.mean(np.arange(6.0))
    assert "mean of the real rows: 2.5" in capsys.readouterr().out


def test_slicing_the_padding_off_an_explicit_array_is_refused(line_mesh):
    padded, _, _ = pitfalls.pad_to_a_multiple(line_mesh, np.arange(6.0))
    with pytest.raises(Exception) as info:
        padded[:6]
    assert type(info.value).__name__ == "ShardingTypeError"
    # ... but answered, it works: the 6 rows come back whole on every device.
    with jax.set_mesh(line_mesh):
        rows = padded.at[:6].get(out_sharding=P())
    assert str(jax.typeof(rows)) == "float32[6]"
    assert {s.data.shape for s in rows.addressable_shards} == {(6,)}
    np.testing.assert_array_equal(rows, np.arange(6.0))


def test_inside_jit_on_auto_axes_six_rows_can_be_split_eight_ways():
    """The page's exception to 'each dimension must be a multiple': with_sharding_constraint
    inside jit pads 6 rows to 8; what goes in or comes out must still divide."""
    auto = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Auto,))
    by_rows = NamedSharding(auto, P("x"))

    def total(rows):
        split = jax.lax.with_sharding_constraint(rows * 2, by_rows)
        return jnp.sum(split)

    rows = jnp.arange(6.0)
    compiled = jax.jit(total).lower(rows).compile()
    assert re.search(r"f32\[8\]\{0\} pad\(", compiled.as_text())
    assert float(compiled(rows)) == 30.0
    with pytest.raises(ValueError, match="partitioned 8"):
        jax.jit(lambda r: r * 2, out_shardings=by_rows)(rows)


def test_a_smaller_axis_divides_six_rows(mesh, capsys):
    halves = pitfalls.smaller_axis(mesh, np.arange(6.0))
    np.testing.assert_array_equal(halves, np.arange(6.0))
    assert halves.sharding.spec == P("x")
    for shard in halves.addressable_shards:
        start = 0 if shard.device.id < 4 else 3
        np.testing.assert_array_equal(shard.data, np.arange(start, start + 3.0))
    assert capsys.readouterr().out == "float32[6@x] each device holds (3,)\n"


def test_an_unknown_axis_name(mesh, capsys):
    pitfalls.unknown_axis(mesh)
    assert capsys.readouterr().out == (
        "ValueError: Resource axis: z of P('z',) is not found in mesh: ('x', 'y').\n"
    )


def test_a_known_axis_name(mesh, capsys):
    shards = pitfalls.known_axis(mesh)
    assert shards == {P("x"): (4, 16), P("y"): (2, 16)}
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "this mesh's axes: ('x', 'y')"
    assert lines[-1].split() == ["P('y',)", "(2,", "16)", "2"]


def test_the_same_mesh_axis_twice(mesh, capsys):
    pitfalls.duplicate_axis(mesh)
    out = capsys.readouterr().out
    assert out.startswith("DuplicateSpecError: ")
    assert out.rstrip().endswith("but P('x', 'x') has duplicate entries for `x`")


def test_duplicate_spec_error_is_neither_a_value_error_nor_exported(mesh):
    with pytest.raises(Exception) as info:
        NamedSharding(mesh, P("x", "x"))
    assert type(info.value).__name__ == "DuplicateSpecError"
    assert not isinstance(info.value, ValueError)
    assert not hasattr(jax, "DuplicateSpecError")
    assert not hasattr(jax.sharding, "DuplicateSpecError")


def test_each_mesh_axis_once(mesh):
    shards = pitfalls.distinct_axes(mesh)
    assert shards == {P("x", "y"): (4, 4), P(("x", "y"), None): (1, 16)}
    values = np.arange(128.0).reshape(8, 16)
    placed = jax.device_put(values, NamedSharding(mesh, P(("x", "y"), None)))
    for shard in placed.addressable_shards:
        np.testing.assert_array_equal(
            shard.data, values[shard.device.id : shard.device.id + 1]
        )
