"""The home page's example: where the blocks of `x` go, and what the jitted sum does."""

import jax
import numpy as np
from jax import P

from snippets.hlo import read_collectives
from snippets.home.first_look import first_look


def test_each_device_holds_a_4x1_block_and_the_sums_stay_split_over_rows(capsys):
    x, sums = first_look()
    assert x.sharding.spec == P("rows", "cols")
    assert dict(x.sharding.mesh.shape) == {"rows": 2, "cols": 4}
    assert {s.data.shape for s in x.addressable_shards} == {(4, 1)}
    # device d holds rows 4 * (d // 4) ... and column d % 4: the grid the diagram draws
    for shard in x.addressable_shards:
        d = shard.device.id
        assert shard.index == (
            slice(4 * (d // 4), 4 * (d // 4) + 4),
            slice(d % 4, d % 4 + 1),
        )
    expected = np.arange(32.0, dtype=np.float32).reshape(8, 4).sum(axis=1)
    np.testing.assert_array_equal(np.asarray(sums), expected)
    assert sums.sharding.spec == P("rows")
    assert str(jax.typeof(sums)) == "float32[8@rows]"
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "float32[8@rows,4@cols]"
    # the drawing, in the terminal: two blocks of sums, each held by one row of the grid
    assert "│CPU 0,1,2,3│CPU 4,5,6,7│" in printed


def test_each_grid_row_adds_its_partial_sums():
    """The comment's claim: the compiled sum adds the partial sums of each row of the grid
    (devices 0-3 and 4-7, along "cols") in one all-reduce, and exchanges nothing else."""
    x, _ = first_look()
    compiled = jax.jit(lambda a: a.sum(axis=1)).lower(x).compile()
    found = read_collectives(compiled)
    assert [c.kind for c in found] == ["all-reduce"]
    assert sorted(found[0].groups) == [[0, 1, 2, 3], [4, 5, 6, 7]]
