"""Errors from jax.shard_map: in_specs that disagree with the input, out_specs that
do not fit what the body returns, collectives outside shard_map, and a loop carry that
starts invariant.

Run `python -m snippets.guides.errors.shard_map_specs` to print what the page shows.
"""

# --8<-- [start:imports]
import jax
import jax.numpy as jnp
from jax import P
from jax.sharding import NamedSharding

# --8<-- [end:imports]
# On the page, print_collectives is defined by an earlier block.
from snippets.hlo import print_collectives

Mesh = jax.sharding.Mesh  # for the type hints; the page's code does not use it


def in_specs_mismatch(line: Mesh) -> jax.Array:
    # --8<-- [start:in-specs-mismatch]
    values = jnp.arange(8.0)  # on one device: its spec is P(None)
    double = jax.shard_map(
        lambda v: 2 * v, mesh=line, in_specs=P("x"), out_specs=P("x")
    )
    try:
        double(values)
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:in-specs-mismatch]
    return values


def in_specs_fix(line: Mesh, values: jax.Array) -> tuple[jax.Array, jax.Array]:
    # --8<-- [start:in-specs-fix]
    x = jax.reshard(values, NamedSharding(line, P("x")))  # (1)!
    double = jax.shard_map(
        lambda v: 2 * v, mesh=line, in_specs=P("x"), out_specs=P("x")
    )
    doubled = double(x)
    print(jax.typeof(x), "->", jax.typeof(doubled), doubled)
    # --8<-- [end:in-specs-fix]
    return x, doubled


def in_specs_omitted(line: Mesh, values: jax.Array) -> jax.Array:
    # --8<-- [start:in-specs-omitted]
    inferred = jax.shard_map(lambda v: 2 * v, mesh=line, out_specs=P("x"))(values)
    print(jax.typeof(inferred))
    # --8<-- [end:in-specs-omitted]
    return inferred


def out_specs_too_long(line: Mesh, x: jax.Array) -> None:
    # --8<-- [start:out-specs-too-long]
    def block_sum(v):
        return v.sum()  # a scalar per device

    try:
        jax.shard_map(block_sum, mesh=line, in_specs=P("x"), out_specs=P("x"))(x)
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:out-specs-too-long]


def out_specs_too_long_fix(line: Mesh, x: jax.Array) -> tuple[jax.Array, jax.Array]:
    # --8<-- [start:out-specs-too-long-fix]
    def block_sum_kept(v):
        return v.sum(keepdims=True)  # (1)!

    def global_sum(v):
        return jax.lax.psum(v.sum(), "x")  # (2)!

    per_device = jax.shard_map(
        block_sum_kept, mesh=line, in_specs=P("x"), out_specs=P("x")
    )(x)
    total = jax.shard_map(
        global_sum,
        mesh=line,
        in_specs=P("x"),
        out_specs=P(),
    )(x)
    print(jax.typeof(per_device), per_device)
    print(jax.typeof(total), total)
    # --8<-- [end:out-specs-too-long-fix]
    return per_device, total


def out_specs_replicated(line: Mesh, x: jax.Array) -> None:
    # --8<-- [start:out-specs-replicated]
    double = jax.shard_map(
        lambda v: 2 * v,
        mesh=line,
        in_specs=P("x"),
        out_specs=P(),  # the same result on every device?
    )
    try:
        double(x)
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:out-specs-replicated]


def out_specs_replicated_fix(line: Mesh, x: jax.Array) -> tuple[jax.Array, jax.Array]:
    # --8<-- [start:out-specs-replicated-fix]
    split = jax.shard_map(  # (1)!
        lambda v: 2 * v, mesh=line, in_specs=P("x"), out_specs=P("x")
    )(x)
    print(jax.typeof(split), split)

    def gathered(v):
        return jax.lax.all_gather(2 * v, "x", tiled=True, to="invarying")  # (2)!

    everywhere = jax.shard_map(gathered, mesh=line, in_specs=P("x"), out_specs=P())(x)
    print(jax.typeof(everywhere), everywhere)
    # --8<-- [end:out-specs-replicated-fix]
    return split, everywhere


def unbound_axis(x: jax.Array) -> None:
    # --8<-- [start:unbound-axis]
    try:
        jax.jit(lambda v: jax.lax.psum(v, "x"))(x)
    except NameError as err:
        print(f"NameError: {err}")
    try:  # the same without jit
        jax.lax.psum(x, "x")
    except NameError as err:
        print(f"NameError: {err}")
    # --8<-- [end:unbound-axis]


def unbound_axis_fix(line: Mesh, x: jax.Array) -> tuple:
    # --8<-- [start:unbound-axis-fix]
    def add_all(v):
        return jax.lax.psum(v, "x")  # (1)!

    summed = jax.shard_map(
        add_all,
        mesh=line,
        in_specs=P("x"),
        out_specs=P("x"),
    )(x)
    print(jax.typeof(summed), summed)

    total = jax.jit(jnp.sum)(x)  # (2)!
    print(jax.typeof(total), total)
    compiled = jax.jit(jnp.sum).lower(x).compile()
    print_collectives(compiled)
    # --8<-- [end:unbound-axis-fix]
    return summed, total, compiled


def eager_gradient(line: Mesh, x: jax.Array):
    # --8<-- [start:eager-gradient]
    def loss(w, v):
        total = jax.shard_map(
            lambda block, w: jax.lax.psum((block * w).sum(), "x"),
            mesh=line,
            in_specs=(P("x"), P()),
            out_specs=P(),
        )
        return total(v, w)

    w = jnp.array(2.0)
    try:
        jax.grad(loss)(w, x)
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:eager-gradient]
    return loss


def eager_gradient_fix(line: Mesh, x: jax.Array, loss) -> tuple:
    # --8<-- [start:eager-gradient-fix]
    w = jnp.array(2.0)
    compiled = jax.jit(jax.grad(loss))(w, x)  # (1)!
    with jax.set_mesh(line):
        eager = jax.grad(loss)(w, x)  # (2)!
    print(compiled, eager, jnp.sum(x))
    # --8<-- [end:eager-gradient-fix]
    return compiled, eager


def loop_carry(line: Mesh, x: jax.Array) -> None:
    # --8<-- [start:loop-carry]
    def add_three_times(v):
        start = jnp.zeros(v.shape)  # the same on every device
        return jax.lax.fori_loop(0, 3, lambda i, total: total + v, start)

    triple = jax.shard_map(
        add_three_times, mesh=line, in_specs=P("x"), out_specs=P("x")
    )
    try:
        triple(x)
    except TypeError as err:
        print(f"TypeError: {err}")
    # --8<-- [end:loop-carry]


def loop_carry_fix(line: Mesh, x: jax.Array) -> jax.Array:
    # --8<-- [start:loop-carry-fix]
    def add_three_times(v):
        start = jax.lax.pcast(jnp.zeros(v.shape), "x", to="varying")  # (1)!
        return jax.lax.fori_loop(0, 3, lambda i, total: total + v, start)

    tripled = jax.shard_map(
        add_three_times, mesh=line, in_specs=P("x"), out_specs=P("x")
    )(x)
    print(jax.typeof(tripled), tripled)
    # --8<-- [end:loop-carry-fix]
    return tripled


def main() -> None:
    from snippets.guides.errors.device_setup import meshes_that_fit

    _, line, _ = meshes_that_fit()
    values = in_specs_mismatch(line)
    x, _ = in_specs_fix(line, values)
    in_specs_omitted(line, values)
    out_specs_too_long(line, x)
    out_specs_too_long_fix(line, x)
    out_specs_replicated(line, x)
    out_specs_replicated_fix(line, x)
    unbound_axis(x)
    unbound_axis_fix(line, x)
    loop_carry(line, x)
    loop_carry_fix(line, x)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
