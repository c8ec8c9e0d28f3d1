"""What each collective does to a value's varying type, and what its gradient runs.

Run `python -m snippets.concepts.shard_map.collective_types` to print what the page shows.
"""

import jax
import jax.numpy as jnp
from jax import P
from jax.sharding import Mesh, NamedSharding

# --8<-- [start:collectives]
# The primitives that move data between devices; what else a gradient runs (casts, slices,
# arithmetic) stays on the device.
MOVES = {
    "psum",
    "psum_invariant",
    "pmax",
    "pmin",
    "all_gather",
    "all_gather_invariant",
    "reduce_scatter",
    "all_to_all",
    "ppermute",
}


def shift(b):
    return jax.lax.ppermute(b, "x", [(i, (i + 1) % 8) for i in range(8)])


VMA_EXAMPLES = {
    "psum(b)": lambda b: jax.lax.psum(b, "x"),
    "pmean(b)": lambda b: jax.lax.pmean(b, "x"),
    "pmax(b)": lambda b: jax.lax.pmax(b, "x"),
    "all_gather(b)": lambda b: jax.lax.all_gather(b, "x", tiled=True),
    'all_gather(b, to="invarying")': lambda b: jax.lax.all_gather(
        b, "x", tiled=True, to="invarying"
    ),
    "psum_scatter(b)": lambda b: jax.lax.psum_scatter(
        b, "x", scatter_dimension=1, tiled=True
    ),
    "all_to_all(b)": lambda b: jax.lax.all_to_all(b, "x", 1, 0, tiled=True),
    "ppermute(b), one step on": shift,
    'pcast(w, to="varying")': lambda w: jax.lax.pcast(w, "x", to="varying"),
}


def moves(jaxpr) -> list[str]:
    """The collectives a jaxpr runs, its sub-jaxprs included, in order."""
    found = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name in MOVES:
            found.append(eqn.primitive.name)
        for value in eqn.params.values():
            for sub in value if isinstance(value, (list, tuple)) else [value]:
                sub = getattr(sub, "jaxpr", sub)  # a closed jaxpr's own
                if hasattr(sub, "eqns"):
                    found += moves(sub)
    return found


# --8<-- [end:collectives]


def collective_types(mesh: Mesh, w: jax.Array) -> dict[str, tuple]:
    # --8<-- [start:types]
    square = jax.device_put(jnp.arange(64.0).reshape(8, 8), NamedSharding(mesh, P("x")))
    rows = {}

    def body(b, w):
        for name, collective in VMA_EXAMPLES.items():
            arg = w if name.startswith("pcast") else b
            out = collective(arg)
            try:
                _, pullback = jax.vjp(collective, arg)
                runs = moves(jax.make_jaxpr(pullback)(out).jaxpr) or ["nothing"]
            except NotImplementedError:
                runs = ["no gradient rule"]
            rows[name] = (str(jax.typeof(arg)), str(jax.typeof(out)), ", ".join(runs))
        return b

    jax.shard_map(body, mesh=mesh, in_specs=(P("x"), P()), out_specs=P("x"))(square, w)
    print(f"{'collective':30} {'in':20} {'out':20} gradient runs")
    for name, (given, got, runs) in rows.items():
        print(f"{name:30} {given:20} {got:20} {runs}")
    # --8<-- [end:types]
    return rows


def main() -> None:
    from jax.sharding import AxisType

    mesh = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Explicit,))
    collective_types(mesh, jnp.array([1.0, 10.0]))


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
