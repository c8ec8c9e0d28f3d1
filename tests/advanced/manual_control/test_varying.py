import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import P

from snippets.advanced.manual_control import varying
from snippets.hlo import count_collectives

RING = [(i, (i + 1) % 8) for i in range(8)]


def run(line, body, v):
    return jax.shard_map(body, mesh=line, in_specs=P("x"), out_specs=P("x"))(v)


def test_the_type_table(line_data, capsys):
    line, v, w = line_data
    capsys.readouterr()
    varying.type_table(line, v, w)
    assert capsys.readouterr().out.splitlines() == [
        "block, in_specs P('x')          float32[2]{V:x}   varies over ['x']",
        "w, in_specs P()                 float32[2]        varies over []",
        "block * w                       float32[2]{V:x}   varies over ['x']",
        "psum(block)                     float32[2]        varies over []",
        "pmax(block)                     float32[2]        varies over []",
        "all_gather(block)               float32[16]{V:x}  varies over ['x']",
        "all_gather(..., to='invarying') float32[16]       varies over []",
        "ppermute(w)                     float32[2]{V:x}   varies over ['x']",
        "axis_index('x')                 int32[]{V:x}      varies over ['x']",
    ]


def test_the_type_has_no_vma_attribute_in_this_release(line_data):
    line, v, _ = line_data
    seen = []

    def body(block):
        seen.append(jax.typeof(block))
        return block

    run(line, body, v)
    assert not hasattr(seen[0], "vma")
    assert seen[0].manual_axis_type.varying == frozenset({"x"})


def test_all_gather_to_invarying_passes_the_check(line_data, capsys):
    line, v, _ = line_data
    capsys.readouterr()
    whole = varying.gather_to_everyone(line, v)
    np.testing.assert_array_equal(whole, np.arange(16.0))
    assert whole.sharding.is_fully_replicated
    assert capsys.readouterr().out.splitlines() == [
        "ValueError: shard_map applied to the function 'gather' was given out_specs which "
        "require replication which can't be statically inferred given the mesh:",
        "float32[16] [ 0.  1.  2.  3.  4.  5.  6.  7.  8.  9. 10. 11. 12. 13. 14. 15.]",
        "{'all-gather': 1}",
    ]


def test_to_changes_the_type_not_the_communication(line_data):
    # The varying gather, returned per device, compiles to the same single all-gather.
    line, v, _ = line_data
    per_device = jax.jit(
        jax.shard_map(
            lambda b: jax.lax.all_gather(b, "x", tiled=True)[None],
            mesh=line,
            in_specs=P("x"),
            out_specs=P("x"),
        )
    )
    assert count_collectives(per_device.lower(v).compile()) == {"all-gather": 1}
    np.testing.assert_array_equal(per_device(v), np.tile(np.arange(16.0), (8, 1)))


def test_the_transposes_of_the_two_all_gathers(line_data):
    # What the page says the types decide under jax.grad: a varying all_gather transposes to a
    # psum_scatter (a reduce-scatter here), an invariant one to a local slice.
    line, v, _ = line_data
    weights = jnp.arange(16.0)

    def varying_gather(b):
        return (jax.lax.all_gather(b, "x", tiled=True) * weights)[None]

    def invariant_gather(b):
        return jax.lax.all_gather(b, "x", tiled=True, to="invarying") * weights

    per_device = jax.shard_map(
        varying_gather, mesh=line, in_specs=P("x"), out_specs=P("x")
    )
    once = jax.shard_map(invariant_gather, mesh=line, in_specs=P("x"), out_specs=P())
    grad_varying = jax.jit(jax.grad(lambda b: jnp.sum(per_device(b))))
    grad_invariant = jax.jit(jax.grad(lambda b: jnp.sum(once(b))))
    assert count_collectives(grad_varying.lower(v).compile()) == {"reduce-scatter": 1}
    assert count_collectives(grad_invariant.lower(v).compile()) == {}
    # Eight copies on the way out, so eight times the weights on the way back.
    np.testing.assert_array_equal(grad_varying(v), 8 * weights)
    np.testing.assert_array_equal(grad_invariant(v), weights)


def test_a_loop_carry_needs_pcast(line_data, capsys):
    line, v, _ = line_data
    capsys.readouterr()
    tripled = varying.loop_carry(line, v)
    np.testing.assert_array_equal(tripled, 3 * np.arange(16.0))
    assert capsys.readouterr().out.splitlines() == [
        "from_zeros: TypeError:",
        "scan body function carry input and carry output must have equal types, but they "
        "differ:",
        "The input carry total has type float32[2] but the corresponding output carry "
        "component has type float32[2]{V:x}, so the manual axis types do not match.",
        "This might be fixed by applying `jax.lax.pcast(..., ('x',), to='varying')`, to the "
        "initial carry value corresponding to the input carry total.",
        "from_varying_zeros: [ 0.  3.  6.  9. 12. 15. 18. 21. 24. 27. 30. 33. 36. 39. 42. 45.]",
    ]


def test_fori_loop_while_loop_and_cond_refuse_the_same_way(line_data):
    line, v, _ = line_data

    def fori(block):
        zeros = jnp.zeros(block.shape)
        return jax.lax.fori_loop(0, 3, lambda i, t: t + block, zeros)

    def while_(block):
        zeros = jnp.zeros(block.shape)
        return jax.lax.while_loop(
            lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] + block), (0, zeros)
        )[1]

    def cond(block):
        zeros = jnp.zeros(block.shape)
        first = jax.lax.axis_index("x") == 0
        return jax.lax.cond(first, lambda: zeros, lambda: block)

    for body in (fori, while_):
        with pytest.raises(TypeError, match="manual axis types do not match"):
            run(line, body, v)
    with pytest.raises(TypeError, match="cond branches must have equal output types"):
        run(line, cond, v)


def test_zeros_like_copies_the_varying_type(line_data):
    line, v, _ = line_data

    def body(block):
        total = jnp.zeros_like(block)
        assert str(jax.typeof(total)) == "float32[2]{V:x}"
        total, _ = jax.lax.scan(lambda t, _: (t + block, None), total, length=3)
        return total

    np.testing.assert_array_equal(run(line, body, v), 3 * np.arange(16.0))


def test_pcast_moves_no_data_and_has_no_way_back(line_data):
    line, v, _ = line_data
    marked = jax.jit(
        jax.shard_map(
            lambda b: b + jax.lax.pcast(jnp.zeros(b.shape), "x", to="varying"),
            mesh=line,
            in_specs=P("x"),
            out_specs=P("x"),
        )
    )
    assert count_collectives(marked.lower(v).compile()) == {}
    with pytest.raises(ValueError, match="Allowed `to` values are"):
        run(line, lambda b: jax.lax.pcast(b, "x", to="invarying"), v)


def test_check_vma_off_costs_an_all_reduce_in_the_gradient(line_data, capsys):
    line, v, w = line_data
    capsys.readouterr()
    programs = varying.unchecked_gradient(line, v, w)
    assert count_collectives(programs[True]) == {"all-reduce": 1}
    assert count_collectives(programs[False]) == {"all-reduce": 2}
    # d/dw of sum(block.reshape(-1, 2) * w) over every device: the column sums of x.
    expected = np.arange(16.0).reshape(-1, 2).sum(axis=0)
    assert expected.tolist() == [56.0, 64.0]
    assert capsys.readouterr().out.splitlines() == [
        "check_vma=True: grad [56. 64.] {'all-reduce': 1}",
        "check_vma=False: grad [56. 64.] {'all-reduce': 2}",
    ]


def test_check_vma_off_drops_the_types_and_ignores_to(line_data):
    line, v, _ = line_data
    seen = []

    def body(block):
        gathered = jax.lax.all_gather(block, "x", tiled=True, to="invarying")
        seen.extend([str(jax.typeof(block)), str(jax.typeof(gathered))])
        return gathered

    f = jax.shard_map(body, mesh=line, in_specs=P("x"), out_specs=P(), check_vma=False)
    jaxpr = str(jax.make_jaxpr(f)(v))
    assert seen == ["float32[2]", "float32[16]"]
    assert "all_gather[" in jaxpr and "all_gather_invariant" not in jaxpr
