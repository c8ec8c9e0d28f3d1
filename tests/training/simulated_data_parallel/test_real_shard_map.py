import contextlib
import io

import numpy as np
import pytest
from jax import P
from jax.sharding import AxisType

from snippets.hlo import count_collectives
from snippets.training.simulated_data_parallel import real_shard_map, simulate


@pytest.fixture(scope="module")
def run():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        x, model, expected = simulate.run_simulation()
        mesh = real_shard_map.build_mesh()
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        data_parallel, x_placed, result = real_shard_map.sharded_forward(mesh, model, x)
    return dict(
        x=x,
        model=model,
        expected=expected,
        mesh=mesh,
        data_parallel=data_parallel,
        x_placed=x_placed,
        result=result,
        printed=printed.getvalue(),
    )


def test_the_mesh_is_one_explicit_data_axis(run):
    assert dict(run["mesh"].shape) == {"data": 8}
    assert run["mesh"].axis_types == (AxisType.Explicit,)


def test_each_device_gets_two_rows_and_the_body_is_traced_once(run):
    assert run["x_placed"].sharding.spec == P("data")
    assert {s.data.shape for s in run["x_placed"].addressable_shards} == {(2, 4)}
    assert run["printed"].splitlines() == [
        "each device runs forward on float32[2,4]{V:data}",
        "the caller gets float32[16@data,3]",
    ]


def test_shard_map_equals_the_simulation_and_the_unsharded_call(run, capsys):
    result = run["result"]
    assert result.shape == (16, 3) and result.sharding.spec == P("data")
    for shard in result.addressable_shards:
        assert shard.data.shape == (2, 3)
    simulated = simulate.shard_map_simulate(0, run["x"], 8, 3)
    np.testing.assert_allclose(result.reshape(-1), simulated, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(
        result.reshape(-1), run["expected"], rtol=1e-6, atol=1e-6
    )
    real_shard_map.compare(result, run["x"], run["model"], run["expected"])
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "shard_map vs the simulation",
        "shard_map vs model(x)",
    ]
    assert all(line.endswith(": within 1e-06: True") for line in lines)


def test_the_forward_pass_needs_no_collectives(run, capsys):
    compiled = real_shard_map.collectives(
        run["data_parallel"], run["model"], run["x_placed"]
    )
    assert count_collectives(compiled) == {}
    assert capsys.readouterr().out.splitlines() == [
        "each device runs forward on float32[2,4]{V:data}",  # traced again by nnx.jit
        "collectives: none",
    ]
