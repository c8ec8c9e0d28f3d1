import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import P
from jax.sharding import AxisType, NamedSharding

from snippets.guides.errors import shard_map_specs
from snippets.hlo import count_collectives


@pytest.fixture
def x(line_mesh):
    return jax.device_put(jnp.arange(8.0), NamedSharding(line_mesh, P("x")))


def test_in_specs_that_disagree_with_an_unsplit_input(line_mesh, capsys):
    values = shard_map_specs.in_specs_mismatch(line_mesh)
    assert values.sharding.is_fully_replicated
    out = capsys.readouterr().out
    assert out.startswith(
        "ValueError: in_specs passed to shard_map: P('x',) does not match the specs of "
        "the input: P(None,) for arg: float32[8]."
    )
    assert "you can use `jax.reshard` on the arguments" in out


def test_auto_axes_would_have_moved_the_data(devices):
    auto = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Auto,))
    doubled = jax.shard_map(
        lambda v: 2 * v, mesh=auto, in_specs=P("x"), out_specs=P("x")
    )(jnp.arange(8.0))
    np.testing.assert_array_equal(doubled, 2 * np.arange(8.0))


def test_reshard_first(line_mesh, capsys):
    x, doubled = shard_map_specs.in_specs_fix(line_mesh, jnp.arange(8.0))
    assert x.sharding.spec == P("x")
    np.testing.assert_array_equal(doubled, 2 * np.arange(8.0))
    assert capsys.readouterr().out.startswith("float32[8@x] -> float32[8@x] ")


def test_omitting_in_specs_replicates_and_stacks_eight_copies(line_mesh, capsys):
    inferred = shard_map_specs.in_specs_omitted(line_mesh, jnp.arange(8.0))
    np.testing.assert_array_equal(inferred, np.tile(2 * np.arange(8.0), 8))
    assert capsys.readouterr().out == "float32[64@x]\n"


def test_a_scalar_cannot_be_joined_along_x(line_mesh, x, capsys):
    shard_map_specs.out_specs_too_long(line_mesh, x)
    out = capsys.readouterr().out
    assert out.startswith(
        "ValueError: shard_map applied to the function 'block_sum' was given an "
        "out_specs entry which is too long"
    )
    assert (
        "out_specs is P('x',) which has length 1, but block_sum(*args) has shape "
        "float32[], which has rank 0" in out
    )


def test_a_rank_mismatch_gives_the_same_error(line_mesh, x):
    with pytest.raises(ValueError, match="out_specs entry which is too long"):
        jax.shard_map(
            lambda v: v, mesh=line_mesh, in_specs=P("x"), out_specs=P("x", None)
        )(x)


def test_keepdims_or_psum(line_mesh, x, capsys):
    per_device, total = shard_map_specs.out_specs_too_long_fix(line_mesh, x)
    np.testing.assert_array_equal(per_device, np.arange(8.0))
    assert per_device.sharding.spec == P("x")
    assert float(total) == 28.0 and total.shape == ()
    assert capsys.readouterr().out.splitlines() == [
        "float32[8@x] [0. 1. 2. 3. 4. 5. 6. 7.]",
        "float32[] 28.0",
    ]


def test_out_specs_that_claim_replication(line_mesh, x, capsys):
    shard_map_specs.out_specs_replicated(line_mesh, x)
    out = capsys.readouterr().out
    assert out.startswith(
        "ValueError: shard_map applied to the function '_rem_singleton' was given "
        "out_specs which require replication which can't be statically inferred"
    )
    assert "passing the check_vma=False argument to `jax.shard_map`" in out


def test_join_the_blocks_or_skip_the_check(line_mesh, x, capsys):
    split, everywhere = shard_map_specs.out_specs_replicated_fix(line_mesh, x)
    for result in (split, everywhere):
        np.testing.assert_array_equal(result, 2 * np.arange(8.0))
    assert split.sharding.spec == P("x")
    assert everywhere.sharding.is_fully_replicated
    assert capsys.readouterr().out.splitlines()[1].startswith("float32[8] ")


def test_all_gather_is_typed_varying_unless_asked_for_invarying(line_mesh, x):
    seen = {}

    def body(v):
        seen["all_gather"] = str(jax.typeof(jax.lax.all_gather(v, "x", tiled=True)))
        invarying = jax.lax.all_gather(v, "x", tiled=True, to="invarying")
        seen["invarying"] = str(jax.typeof(invarying))
        seen["psum"] = str(jax.typeof(jax.lax.psum(v, "x")))
        return v

    jax.shard_map(body, mesh=line_mesh, in_specs=P("x"), out_specs=P("x"))(x)
    assert seen == {
        "all_gather": "float32[8]{V:x}",
        "invarying": "float32[8]",
        "psum": "float32[1]",
    }


def test_the_fix_keeps_the_check_on():
    import inspect

    source = inspect.getsource(shard_map_specs.out_specs_replicated_fix)
    assert "check_vma" not in source and 'to="invarying"' in source


def test_an_axis_name_outside_shard_map(x, capsys):
    shard_map_specs.unbound_axis(x)
    assert capsys.readouterr().out.splitlines() == [
        "NameError: Found an unbound axis name: x. To fix this, please call psum under "
        "`jax.shard_map`.",
        "NameError: unbound axis name: x",
    ]


def test_psum_inside_shard_map_or_jit_on_the_whole_array(line_mesh, x, capsys):
    summed, total, compiled = shard_map_specs.unbound_axis_fix(line_mesh, x)
    np.testing.assert_array_equal(summed, np.full(8, 28.0))
    assert float(total) == 28.0
    assert count_collectives(compiled) == {"all-reduce": 1}
    assert capsys.readouterr().out.splitlines()[-1] == "all-reduce          1"


def test_a_loop_carry_that_starts_invariant(line_mesh, x, capsys):
    shard_map_specs.loop_carry(line_mesh, x)
    out = capsys.readouterr().out
    assert out.startswith(
        "TypeError: scan body function carry input and carry output must have equal "
        "types, but they differ:"
    )
    assert (
        "has type float32[1] but the corresponding output carry component has type "
        "float32[1]{V:x}" in out
    )
    assert "jax.lax.pcast(..., ('x',), to='varying')" in out


def test_pcast_fixes_the_carry_without_moving_data(line_mesh, x, capsys):
    tripled = shard_map_specs.loop_carry_fix(line_mesh, x)
    np.testing.assert_array_equal(tripled, 3 * np.arange(8.0))
    assert capsys.readouterr().out.startswith("float32[8@x] ")

    def start(v):
        return jax.lax.pcast(jnp.zeros(v.shape), "x", to="varying")

    cast = jax.shard_map(start, mesh=line_mesh, in_specs=P("x"), out_specs=P("x"))
    assert count_collectives(jax.jit(cast).lower(x).compile()) == {}


def test_an_eager_gradient_on_an_explicit_mesh_needs_the_mesh(line_mesh, x, capsys):
    loss = shard_map_specs.eager_gradient(line_mesh, x)
    assert capsys.readouterr().out.startswith(
        "ValueError: Length of device assignment 1 is not equal to the size of the mesh 8 "
        "of aval f32[]({Explicit: ('x',)})."
    )
    compiled, eager = shard_map_specs.eager_gradient_fix(line_mesh, x, loss)
    assert float(compiled) == float(eager) == float(np.sum(np.asarray(x))) == 28.0
    assert capsys.readouterr().out.split() == ["28.0", "28.0", "28.0"]
