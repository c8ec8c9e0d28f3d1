"""Varying and invariant values: what the types say, where they refuse, and the answers.

Run `python -m snippets.advanced.manual_control.varying` to print what the page shows.
"""

import jax
import jax.numpy as jnp
from jax import P
from jax.sharding import AxisType, Mesh, NamedSharding

from snippets.hlo import count_collectives  # the page includes it from snippets/hlo.py


def build_line() -> tuple[Mesh, jax.Array, jax.Array]:
    # --8<-- [start:line-mesh]
    line = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Explicit,))
    v = jax.device_put(jnp.arange(16.0), NamedSharding(line, P("x")))
    w = jax.device_put(jnp.array([1.0, 10.0]), NamedSharding(line, P()))
    # --8<-- [end:line-mesh]
    return line, v, w


def type_table(line: Mesh, v: jax.Array, w: jax.Array) -> jax.Array:
    # --8<-- [start:type-table]
    def show_types(block, w):
        ring = [(i, (i + 1) % 8) for i in range(8)]
        values = {
            "block, in_specs P('x')": block,
            "w, in_specs P()": w,
            "block * w": block * w,
            "psum(block)": jax.lax.psum(block, "x"),
            "pmax(block)": jax.lax.pmax(block, "x"),
            "all_gather(block)": jax.lax.all_gather(block, "x", tiled=True),
            "all_gather(..., to='invarying')": jax.lax.all_gather(
                block, "x", tiled=True, to="invarying"
            ),
            "ppermute(w)": jax.lax.ppermute(w, "x", ring),
            "axis_index('x')": jax.lax.axis_index("x"),
        }
        for name, value in values.items():
            varying = sorted(jax.typeof(value).manual_axis_type.varying)  # (1)!
            print(f"{name:<32}{jax.typeof(value)!s:<18}varies over {varying}")
        return block

    jax.shard_map(show_types, mesh=line, in_specs=(P("x"), P()), out_specs=P("x"))(v, w)
    # --8<-- [end:type-table]
    return v


def gather_to_everyone(line: Mesh, v: jax.Array) -> jax.Array:
    # --8<-- [start:gather-invariant]
    def gather(block):
        return jax.lax.all_gather(block, "x", tiled=True)

    try:
        jax.jit(jax.shard_map(gather, mesh=line, in_specs=P("x"), out_specs=P()))(v)
    except ValueError as err:
        print("ValueError:", str(err).splitlines()[0])

    def gather_invariant(block):
        return jax.lax.all_gather(block, "x", tiled=True, to="invarying")

    everyone = jax.jit(
        jax.shard_map(gather_invariant, mesh=line, in_specs=P("x"), out_specs=P())
    )
    whole = everyone(v)
    print(jax.typeof(whole), whole)
    print(count_collectives(everyone.lower(v).compile()))
    # --8<-- [end:gather-invariant]
    return whole


# --8<-- [start:three-times]
def three_times(block, start):
    """start + block + block + block, added up in a loop."""

    def add(total, _):
        return total + block, None

    total, _ = jax.lax.scan(add, start, length=3)
    return total


def from_zeros(block):
    return three_times(block, jnp.zeros(block.shape, block.dtype))  # (1)!


def from_varying_zeros(block):
    zeros = jnp.zeros(block.shape, block.dtype)
    return three_times(block, jax.lax.pcast(zeros, "x", to="varying"))  # (2)!


# --8<-- [end:three-times]


def loop_carry(line: Mesh, v: jax.Array) -> jax.Array | None:
    # --8<-- [start:loop-carry]
    tripled = None
    for body in (from_zeros, from_varying_zeros):
        f = jax.shard_map(body, mesh=line, in_specs=P("x"), out_specs=P("x"))
        try:
            tripled = f(v)
            print(f"{body.__name__}:", tripled)
        except TypeError as err:
            print(f"{body.__name__}: TypeError:")
            print(*[text for text in str(err).splitlines() if text][:3], sep="\n")
    # --8<-- [end:loop-carry]
    return tripled


def unchecked_gradient(line: Mesh, v: jax.Array, w: jax.Array) -> dict:
    # --8<-- [start:check-vma-off]
    def weighted_total(w, block):
        return jax.lax.psum(jnp.sum(block.reshape(-1, 2) * w), "x")

    programs = {}
    for check in (True, False):
        total = jax.shard_map(
            weighted_total,
            mesh=line,
            in_specs=(P(), P("x")),
            out_specs=P(),
            check_vma=check,
        )
        grad = jax.jit(jax.grad(total))
        programs[check] = grad.lower(w, v).compile()
        print(
            f"check_vma={check}: grad {grad(w, v)}", count_collectives(programs[check])
        )
    # --8<-- [end:check-vma-off]
    return programs


def main() -> None:
    line, v, w = build_line()
    type_table(line, v, w)
    gather_to_everyone(line, v)
    loop_carry(line, v)
    unchecked_gradient(line, v, w)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
