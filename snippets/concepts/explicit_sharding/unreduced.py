"""Partial sums as a type on Explicit axes: unreduced results, reduced weights.

Run `python -m snippets.concepts.explicit_sharding.unreduced` to print what the page shows.
"""

# --8<-- [start:imports]
import jax
import jax.numpy as jnp
import numpy as np
from jax import P
from jax.sharding import NamedSharding

# --8<-- [end:imports]
from snippets.concepts.explicit_sharding.propagation_rules import show_types
from snippets.concepts.explicit_sharding.sharding_in_types import arange_on

Mesh = jax.sharding.Mesh  # for the type hints; the page's code does not use it


def partial_sums(x: jax.Array, w: jax.Array, mesh: Mesh) -> jax.Array:
    # --8<-- [start:unreduced]
    left_as_parts = NamedSharding(mesh, P("x", None, unreduced={"y"}))  # (1)!
    parts = show_types(lambda a, b: jnp.matmul(a, b, out_sharding=left_as_parts), x, w)
    first = parts.addressable_shards[0]  # device 0: rows 0-3, k = 0 of the sum
    mine = np.asarray(x)[:4, :1] @ np.asarray(w)[:1, :]
    print(first.device, "holds x[:4, :1] @ w[:1]:", np.array_equal(first.data, mine))
    # --8<-- [end:unreduced]
    return parts


def finish(parts: jax.Array, mesh: Mesh) -> jax.Array:
    # --8<-- [start:finish]
    rows_split = NamedSharding(mesh, P("x", None))
    finished = show_types(lambda u: jax.reshard(u, rows_split), parts)  # (1)!
    # --8<-- [end:finish]
    return finished


def refused(parts: jax.Array, mesh: Mesh) -> list[str]:
    # --8<-- [start:refused]
    other = arange_on(mesh, (8, 8), P("x", None))
    attempts = {
        "tanh": lambda u: jnp.tanh(u),
        "add": lambda u: u + other,
        "psum": lambda u: jax.lax.psum(u, "y"),
    }
    errors = []
    for op, attempt in attempts.items():
        try:
            jax.jit(attempt)(parts)
        except Exception as err:  # ShardingTypeError is not exported by jax
            errors.append(type(err).__name__)
            print(f"{op}: {type(err).__name__}: {err}")
    # --8<-- [end:refused]
    return errors


# --8<-- [start:squared-loss]
def squared_loss(w: jax.Array, batch: jax.Array) -> jax.Array:
    """Mean over the batch of the squared outputs of one linear layer."""
    if w.ndim != 2 or batch.ndim != 2 or batch.shape[1] != w.shape[0]:
        raise ValueError(
            f"Need a (features, outputs) weight and a (batch, features) batch; "
            f"got w {w.shape} and batch {batch.shape}."
        )
    return jnp.sum((batch @ w) ** 2) / batch.shape[0]


# --8<-- [end:squared-loss]


def gradients(mesh: Mesh) -> tuple[jax.Array, jax.Array, jax.Array]:
    # --8<-- [start:reduced-weights]
    batch = arange_on(mesh, (8, 4), P("x", None))  # examples split over x
    weight = arange_on(mesh, (4, 8), P())  # the same on every device
    weight_reduced = arange_on(mesh, (4, 8), P(reduced={"x"}))  # (1)!
    grad = jax.grad(squared_loss)
    g = show_types(grad, weight, batch)
    g_parts = show_types(grad, weight_reduced, batch)  # (2)!
    # --8<-- [end:reduced-weights]
    return batch, g, g_parts


def finish_gradient(g: jax.Array, g_parts: jax.Array, mesh: Mesh) -> jax.Array:
    # --8<-- [start:finish-gradient]
    try:
        jax.jit(lambda u: 0.1 * u)(g_parts)
    except Exception as err:
        print(f"{type(err).__name__}: {err}")
    replicated = NamedSharding(mesh, P())
    g_total = show_types(lambda u: jax.reshard(u, replicated), g_parts)
    print("same as the P() weight's gradient:", np.array_equal(g_total, g))
    # --8<-- [end:finish-gradient]
    return g_total


def main() -> None:
    from snippets.concepts.explicit_sharding import contraction, sharding_in_types

    mesh = sharding_in_types.build_mesh()
    x, _ = sharding_in_types.types_outside_jit(mesh)
    w = contraction.ambiguous(x, mesh)
    parts = partial_sums(x, w, mesh)
    finish(parts, mesh)
    refused(parts, mesh)
    _, g, g_parts = gradients(mesh)
    finish_gradient(g, g_parts, mesh)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
