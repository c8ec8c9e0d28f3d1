"""Mixing axis types for one function: jax.sharding.auto_axes and explicit_axes.

Run `python -m snippets.concepts.explicit_sharding.mixing_axes` to print what the page shows.
"""

# --8<-- [start:imports]
import jax
import numpy as np
from jax import P
from jax.sharding import AxisType, NamedSharding, auto_axes, explicit_axes

# --8<-- [end:imports]
from snippets.hlo import print_collectives  # the page includes it from snippets/hlo.py

Mesh = jax.sharding.Mesh  # for the type hints; the page's code does not use it


def auto_inside_explicit(x: jax.Array, w: jax.Array, mesh: Mesh) -> jax.Array:
    # --8<-- [start:auto-axes]
    def matmul(a, b):
        axis_types = jax.sharding.get_abstract_mesh().axis_types
        print("  inside:", jax.typeof(a), jax.typeof(b), axis_types)
        return a @ b  # (1)!

    with jax.set_mesh(mesh):
        y_auto = auto_axes(matmul, axes="y", out_sharding=P("x", None))  # (2)!
        matmul_y_auto = jax.jit(y_auto)
        xw = matmul_y_auto(x, w)
        print("result:", jax.typeof(xw))
        print_collectives(matmul_y_auto.lower(x, w).compile())
    # --8<-- [end:auto-axes]
    return xw


def explicit_inside_auto() -> tuple[jax.Array, jax.Array]:
    # --8<-- [start:explicit-axes]
    auto_mesh = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    host = np.arange(32.0, dtype=np.float32).reshape(8, 4)
    x_auto = jax.device_put(host, NamedSharding(auto_mesh, P("x", "y")))

    def row_sums(a):
        print("  inside:", jax.typeof(a), "->", jax.typeof(a.sum(axis=1)))
        return a.sum(axis=1)

    with jax.set_mesh(auto_mesh):
        row_sums_typed = jax.jit(explicit_axes(row_sums, in_sharding=P("x", "y")))
        sums = row_sums_typed(x_auto)
        print("result:", jax.typeof(sums), "with spec", sums.sharding.spec)
        print_collectives(row_sums_typed.lower(x_auto).compile())
    # --8<-- [end:explicit-axes]
    return x_auto, sums


def main() -> None:
    from snippets.concepts.explicit_sharding import contraction, sharding_in_types

    mesh = sharding_in_types.build_mesh()
    x, _ = sharding_in_types.types_outside_jit(mesh)
    w = contraction.ambiguous(x, mesh)
    auto_inside_explicit(x, w, mesh)
    explicit_inside_auto()


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
