import jax
import numpy as np
from jax import P

from snippets.concepts.shard_map import local_view, partial_sums


def test_without_psum_each_device_returns_its_partial_sum(line_mesh, capsys):
    _, x = local_view.build_data()
    capsys.readouterr()
    local_sum, partials = partial_sums.partial_sums(line_mesh, x)
    np.testing.assert_array_equal(partials, np.arange(16.0).reshape(8, 2).sum(axis=1))
    assert partials.sharding.spec == P("x")
    assert float(np.sum(partials)) == np.sum(np.arange(16.0))
    assert capsys.readouterr().out.splitlines() == [
        "float32[8@x] [ 1.  5.  9. 13. 17. 21. 25. 29.]",
        "np.sum(x) = 120.0",
    ]
    assert local_sum(np.arange(4.0)).shape == (1,)


def test_psum_gives_the_total_as_one_replicated_scalar(line_mesh, capsys):
    _, x = local_view.build_data()
    capsys.readouterr()
    _, total = partial_sums.total(line_mesh, x)
    np.testing.assert_allclose(total, np.sum(np.arange(16.0)))
    assert str(jax.typeof(total)) == "float32[]"
    assert total.sharding.spec == P()
    assert all(float(s.data) == 120.0 for s in total.addressable_shards)
    assert capsys.readouterr().out.splitlines() == [
        "float32[] 120.0",
        "equals np.sum(x): True",
    ]
