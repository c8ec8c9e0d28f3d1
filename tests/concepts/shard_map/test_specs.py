import jax
import numpy as np
from jax import P

from snippets.concepts.shard_map import local_view, specs


def test_out_specs_decide_the_dimension_blocks_are_glued_along(line_mesh, capsys):
    _, x = local_view.build_data()
    capsys.readouterr()
    glued = specs.reassemble(line_mesh, x)
    rows, wide = glued[P("x")], glued[P(None, "x")]
    np.testing.assert_array_equal(rows, np.arange(16.0).reshape(8, 2))
    np.testing.assert_array_equal(wide, np.arange(16.0).reshape(1, 16))
    assert str(jax.typeof(rows)) == "float32[8@x,2]"
    assert str(jax.typeof(wide)) == "float32[1,16@x]"
    # Each device keeps the block it returned.
    for array in (rows, wide):
        for shard in array.addressable_shards:
            i = shard.device.id
            np.testing.assert_array_equal(shard.data.ravel(), [2.0 * i, 2.0 * i + 1])
    out = capsys.readouterr().out
    assert "out_specs=P('x',): float32[8@x,2]" in out
    assert "out_specs=P(None, 'x'): float32[1,16@x]" in out


def test_p_empty_gives_every_device_the_whole_input_and_one_output(line_mesh, capsys):
    _, x = local_view.build_data()
    capsys.readouterr()
    weighted, w_sum = specs.replicated_input(line_mesh, x)
    np.testing.assert_array_equal(weighted, np.arange(16.0) * np.tile([1.0, 10.0], 8))
    assert weighted.sharding.spec == P("x")
    assert w_sum.shape == () and float(w_sum) == 11.0
    assert w_sum.sharding.spec == P()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "block: float32[2]{V:x}  w: float32[2]"
    assert lines[-1] == "float32[] 11.0"
