"""Shardings inside a jitted function: with_sharding_constraint, and what resharding costs.

Run `python -m snippets.concepts.automatic_sharding.constraints` to print what the page shows.
"""

# --8<-- [start:imports]
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax import P
from jax.sharding import AxisType, NamedSharding

# --8<-- [end:imports]
from snippets.concepts.automatic_sharding.propagation import show
from snippets.hlo import count_collectives

Mesh = jax.sharding.Mesh  # for the type hints; the page's code does not use it


def without_constraint(x: jax.Array) -> jax.Array:
    # --8<-- [start:without-constraint]
    def normalize_rows(a):
        return a / a.sum(axis=1, keepdims=True)

    shares = show(normalize_rows, x)
    # --8<-- [end:without-constraint]
    return shares


def with_constraint(x: jax.Array, mesh: Mesh) -> jax.Array:
    # --8<-- [start:with-constraint]
    whole_rows = NamedSharding(mesh, P("x", None))

    def normalize_whole_rows(a):
        a = jax.lax.with_sharding_constraint(a, whole_rows)  # (1)!
        return a / a.sum(axis=1, keepdims=True)

    shares = show(normalize_whole_rows, x)
    # --8<-- [end:with-constraint]
    return shares


# --8<-- [start:running-totals]
def running_totals(
    mesh: jax.sharding.Mesh, spec: P
) -> Callable[[jax.Array], jax.Array]:
    """Running totals down each column of an (n, m) array, laid out as `spec` first."""
    if set(mesh.axis_types) != {AxisType.Auto}:
        raise ValueError(
            f"The mesh has axis types {mesh.axis_types}; P.UNCONSTRAINED needs "
            "Auto axes (on Explicit axes the type must say every sharding)."
        )
    if not isinstance(spec, P) or len(spec) != 2 or spec[0] is not None:
        raise ValueError(
            f"spec must be P(None, ...): the columns are summed down dimension 0, "
            f"which must be whole on each device; got {spec!r}."
        )
    constraint = NamedSharding(mesh, spec)

    def totals(a):
        a = jax.lax.with_sharding_constraint(a, constraint)
        return jnp.cumsum(a, axis=0)

    return totals


# --8<-- [end:running-totals]


def unconstrained(x: jax.Array, mesh: Mesh) -> tuple[jax.Array, jax.Array]:
    # --8<-- [start:unconstrained]
    both_whole = show(running_totals(mesh, P(None, None)), x)
    columns_free = show(running_totals(mesh, P(None, P.UNCONSTRAINED)), x)  # (1)!
    # --8<-- [end:unconstrained]
    return both_whole, columns_free


def unconstrained_out_shardings(x: jax.Array, mesh: Mesh) -> None:
    # --8<-- [start:unconstrained-out]
    free = NamedSharding(mesh, P(None, P.UNCONSTRAINED))
    try:
        jax.jit(lambda a: 2 * a, out_shardings=free)(x)
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:unconstrained-out]


# --8<-- [start:resharding-costs]
def resharding_costs(x: jax.Array, targets: list[P]) -> dict[P, dict]:
    """Print the collectives that moving x to each target spec takes."""
    mesh = getattr(getattr(x, "sharding", None), "mesh", None)
    if mesh is None or set(mesh.axis_types) != {AxisType.Auto}:
        raise ValueError(
            "x must be placed on a mesh with Auto axes. (On Explicit axes, "
            "move arrays with jax.reshard.)"
        )
    constrain = jax.jit(jax.lax.with_sharding_constraint, static_argnums=1)
    print(f"x is {jax.typeof(x)} with spec {x.sharding.spec}\n")
    print(f"{'moved to':<22}collectives")
    costs = {}
    for spec in targets:
        if not isinstance(spec, P) or len(spec) > x.ndim:
            raise ValueError(
                f"Each target must be a P(...) with at most {x.ndim} "
                f"entries, got {spec!r}."
            )
        target = NamedSharding(mesh, spec)
        target.shard_shape(x.shape)  # (1)!
        costs[spec] = count_collectives(constrain.lower(x, target).compile())
        found = ", ".join(f"{n} {op}" for op, n in costs[spec].items())
        print(f"{spec!s:<22}{found or 'none'}")
    return costs


# --8<-- [end:resharding-costs]


def resharding_table(x: jax.Array) -> dict[P, dict[str, int]]:
    # --8<-- [start:resharding-table]
    costs = resharding_costs(
        x,
        [
            P("x", "y"),  # where x already is
            P("x", None),
            P(None, "y"),
            P(("x", "y"), None),
            P("y", "x"),
            P(),
        ],
    )
    # --8<-- [end:resharding-table]
    return costs


def device_put_inside_jit(x: jax.Array, mesh: Mesh) -> jax.Array:
    # --8<-- [start:device-put-in-jit]
    whole_rows = NamedSharding(mesh, P("x", None))
    moved = show(lambda a: jax.device_put(a, whole_rows), x)
    # --8<-- [end:device-put-in-jit]
    return moved


def reshard_on_auto_axes(x: jax.Array, mesh: Mesh) -> None:
    # --8<-- [start:reshard-auto]
    try:
        jax.reshard(x, NamedSharding(mesh, P("x", None)))
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:reshard-auto]


def vmapped_constraint(mesh: Mesh) -> dict:
    # --8<-- [start:spmd-axis-name]
    def project(row, w):  # one example: a (16,) row
        out = row @ w
        return jax.lax.with_sharding_constraint(
            out, NamedSharding(mesh, P("y"))
        )  # (1)!

    rows, w = jax.numpy.ones((8, 16)), jax.numpy.ones((16, 32))
    specs = {}
    for axis in (None, "x"):
        batched = jax.vmap(project, in_axes=(0, None), spmd_axis_name=axis)
        specs[axis] = jax.jit(batched)(rows, w).sharding.spec
        print(f"spmd_axis_name={axis!r}: {specs[axis]}")  # (2)!
    # --8<-- [end:spmd-axis-name]
    return specs


def main() -> None:
    from snippets.concepts.automatic_sharding import propagation

    mesh = propagation.build_mesh()
    x = propagation.place_input(mesh)
    without_constraint(x)
    with_constraint(x, mesh)
    unconstrained(x, mesh)
    unconstrained_out_shardings(x, mesh)
    resharding_table(x)
    device_put_inside_jit(x, mesh)
    reshard_on_auto_axes(x, mesh)
    vmapped_constraint(mesh)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
