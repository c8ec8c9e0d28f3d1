"""The grader's reaches into JAX's internals (the primitives a call binds; while it
traces, `.sharding` on a traced array and the start of every vmap), and how it reads a
traced program."""

import jax.numpy as jnp

from snippets.exercises import grading


def test_primitive_bind_is_where_the_grader_patches_it():
    """A JAX release that moves Primitive.bind fails here (and `nox -s latest` shows it)."""
    from jax._src import core

    assert callable(core.Primitive.bind)
    before = core.Primitive.bind
    (jnp.sin(jnp.ones(3)) * 2).block_until_ready()  # cached: as after an earlier test
    seen = grading.called_primitives(lambda x: jnp.sin(x) * 2, (jnp.ones(3),))
    assert {"sin", "mul"} <= seen
    assert core.Primitive.bind is before  # put back after the call


def test_the_trace_patches_of_the_grader_are_put_back():
    """While tracing, `.sharding` works on a traced array and each vmap is recorded with
    the named axes bound around it; afterwards JAX is as it was."""
    import jax
    from jax._src import core
    from jax._src.interpreters import batching

    sharding, start = core.Tracer.__dict__["sharding"], batching.BatchTrace.__init__
    assert "block_until_ready" not in core.Tracer.__dict__
    vmaps = []

    def per_row(x):
        assert x.sharding is not None  # a traced array's, inside the trace
        return jax.vmap(jnp.sum)(x).block_until_ready()

    grading.traced_program(per_row, (jnp.ones((4, 3)),), (0,), vmaps)
    assert vmaps and set(vmaps) == {frozenset()}  # a vmap, outside any shard_map
    assert core.Tracer.__dict__["sharding"] is sharding
    assert "block_until_ready" not in core.Tracer.__dict__
    assert batching.BatchTrace.__init__ is start


def test_program_steps_follow_the_data_to_the_result(line_mesh):
    """Which argument each operand comes from, what reaches the result, and whether the
    result is a shard_map's output, only moved or reshaped."""
    import jax
    from jax import P

    def fn(x, y, later):
        dropped = jnp.sin(y)  # noqa: F841 - computed, never used
        blocks = jax.shard_map(
            lambda a: a * 2.0, mesh=line_mesh, in_specs=P("x"), out_specs=P("x")
        )
        inner = jax.jit(blocks)(x).reshape(-1)
        return (inner + 1.0) if later else inner

    x = jax.device_put(jnp.ones((8, 2)), jax.NamedSharding(line_mesh, P("x")))
    args = (x, jnp.ones(3), False)
    steps = {
        s.name: s
        for s in grading.program_steps(grading.traced_program(fn, args, (0, 1)), (0, 1))
    }
    assert steps["sin"].operands == (frozenset({1}),) and not steps["sin"].reaches
    assert steps["shard_map"].operands == (frozenset({0}),)
    assert steps["shard_map"].reaches and steps["shard_map"].returned
    args = (x, jnp.ones(3), True)  # one more operation after it: not returned as it is
    steps = {
        s.name: s
        for s in grading.program_steps(grading.traced_program(fn, args, (0, 1)), (0, 1))
    }
    assert steps["shard_map"].reaches and not steps["shard_map"].returned


def test_program_steps_say_which_run_in_a_shard_map_body(line_mesh):
    """Steps of a shard_map's body, and of calls inside it, are marked manual; the
    shard_map itself and what runs around it are not."""
    import jax
    from jax import P

    def fn(x):
        body = jax.jit(lambda a: jnp.cos(a) * 2.0)
        blocks = jax.shard_map(body, mesh=line_mesh, in_specs=P("x"), out_specs=P("x"))
        return jnp.sin(blocks(x))

    x = jax.device_put(jnp.ones((8, 2)), jax.NamedSharding(line_mesh, P("x")))
    steps = grading.program_steps(grading.traced_program(fn, (x,), (0,)), (0,))
    manual = {s.name: s.manual for s in steps}
    assert manual["cos"] and manual["mul"]
    assert not manual["shard_map"] and not manual["sin"]
    assert [s.out_shapes for s in steps if s.name == "cos"] == [((1, 2),)]
