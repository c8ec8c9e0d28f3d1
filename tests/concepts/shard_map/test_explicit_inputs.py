import jax
import numpy as np
from jax import P
from jax.sharding import AxisType, SingleDeviceSharding

from snippets.concepts.shard_map import explicit_inputs


def test_an_unplaced_input_does_not_match_in_specs(line_mesh, capsys):
    plain, _ = explicit_inputs.unplaced_input(line_mesh)
    assert isinstance(plain.sharding, SingleDeviceSharding)
    assert capsys.readouterr().out == (
        "ValueError: in_specs passed to shard_map: P('x',) does not match the specs "
        "of the input: P(None,) for arg: float32[16]. `in_specs` is an optional "
        "argument so you can omit specifying it and shard_map will infer the "
        "in_specs from the arguments. If you want to reshard your inputs, you can use "
        "`jax.reshard` on the arguments and then pass those args to shard_map.\n"
    )


def test_resharding_first_fixes_it_and_inference_follows_the_type(line_mesh, capsys):
    plain, double = explicit_inputs.unplaced_input(line_mesh)
    capsys.readouterr()
    placed, doubled, inferred, inferred_plain = explicit_inputs.reshard_first(
        line_mesh, plain, double
    )
    assert placed.sharding.spec == P("x")
    np.testing.assert_array_equal(doubled, np.arange(16.0) * 2)
    np.testing.assert_array_equal(inferred, doubled)
    # Inferred from an unplaced input, in_specs is P(None): eight whole copies.
    np.testing.assert_array_equal(inferred_plain, np.tile(np.arange(16.0) * 2, 8))
    assert capsys.readouterr().out.splitlines()[-1] == "placed: (16,)  plain: (128,)"


def test_an_auto_mesh_moves_the_input_itself(line_mesh, capsys):
    plain, _ = explicit_inputs.unplaced_input(line_mesh)
    capsys.readouterr()
    auto, doubled = explicit_inputs.auto_mesh(plain)
    assert auto.axis_types == (AxisType.Auto,)
    np.testing.assert_array_equal(doubled, np.arange(16.0) * 2)
    assert doubled.sharding.spec == P("x")
    assert str(jax.typeof(doubled)) == "float32[16]"
    assert {s.data.shape for s in doubled.addressable_shards} == {(2,)}
    assert capsys.readouterr().out.splitlines()[0] == "float32[16] P('x',)"


def test_device_put_places_the_input_as_well_as_reshard(line_mesh, capsys):
    # The page's annotation: jax.device_put does the same as jax.reshard here.
    from jax.sharding import NamedSharding

    plain, double = explicit_inputs.unplaced_input(line_mesh)
    put = jax.device_put(plain, NamedSharding(line_mesh, P("x")))
    assert str(jax.typeof(put)) == "float32[16@x]"
    np.testing.assert_array_equal(double(put), np.arange(16.0) * 2)
