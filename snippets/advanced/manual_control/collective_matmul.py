"""A collective matmul: x's row blocks travel round a ring while each device multiplies.

`gather_matmul` and `ring_matmul` are jitted with the mesh static, so that both can be
lowered from `jax.ShapeDtypeStruct` arguments that carry a `NamedSharding` (for TPU).
Run `python -m snippets.advanced.manual_control.collective_matmul` to print what the page shows.
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax import P
from jax.sharding import Mesh, NamedSharding

from snippets.hlo import print_collectives  # the page includes it from snippets/hlo.py


# --8<-- [start:check-matmul]
def check_matmul(x, w, mesh: Mesh) -> int:
    """Check that x (rows over "x") @ w (columns over "x") fits the mesh; return its size."""
    if "x" not in mesh.axis_names:
        raise ValueError(
            f"The ring runs over a mesh axis named 'x'; {mesh.axis_names} has none."
        )
    n = mesh.shape["x"]
    if x.ndim != 2 or w.ndim != 2 or x.shape[1] != w.shape[0]:
        raise ValueError(
            f"x @ w needs shapes (m, k) and (k, n), not {x.shape} and {w.shape}."
        )
    if x.shape[0] % n or w.shape[1] % n:
        raise ValueError(
            f"Axis 'x' has {n} devices: the rows of x ({x.shape[0]}) and the columns of "
            f"w ({w.shape[1]}) must both be multiples of {n}."
        )
    return n


# --8<-- [end:check-matmul]


# --8<-- [start:gather-matmul]
@jax.jit(static_argnames="mesh")
def gather_matmul(x, w, mesh: Mesh):
    """x @ w: every device gathers all of x, then multiplies by its columns of w."""
    check_matmul(x, w, mesh)

    def body(x_block, w_block):
        whole_x = jax.lax.all_gather(x_block, "x", tiled=True)
        return whole_x @ w_block

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P("x", None), P(None, "x")), out_specs=P(None, "x")
    )(x, w)


# --8<-- [end:gather-matmul]


# --8<-- [start:ring-matmul]
@jax.jit(static_argnames="mesh")
def ring_matmul(x, w, mesh: Mesh):
    """x @ w: the row blocks of x go round a ring; each stop multiplies the one it holds."""
    n = check_matmul(x, w, mesh)
    to_the_next = [(i, (i + 1) % n) for i in range(n)]

    def body(x_block, w_block):
        rows = x_block.shape[0]
        me = jax.lax.axis_index("x")
        out = jnp.zeros((rows * n, w_block.shape[1]), x_block.dtype)
        out = jax.lax.pcast(out, "x", to="varying")  # (1)!

        def multiply(out, held, hops):
            owner = (me - hops) % n  # (2)!
            product = held @ w_block
            return jax.lax.dynamic_update_slice_in_dim(out, product, owner * rows, 0)

        def step(i, carry):
            out, held = carry
            passed_on = jax.lax.ppermute(held, "x", to_the_next)  # (3)!
            return multiply(out, held, i), passed_on

        out, held = jax.lax.fori_loop(0, n - 1, step, (out, x_block), unroll=True)
        return multiply(out, held, n - 1)  # (4)!

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P("x", None), P(None, "x")), out_specs=P(None, "x")
    )(x, w)


# --8<-- [end:ring-matmul]


def build_operands(line: Mesh) -> tuple[jax.Array, jax.Array]:
    # --8<-- [start:operands]
    rng = np.random.default_rng(1)
    a = jax.device_put(
        rng.standard_normal((64, 16), np.float32), NamedSharding(line, P("x", None))
    )
    b = jax.device_put(
        rng.standard_normal((16, 32), np.float32), NamedSharding(line, P(None, "x"))
    )
    print("a:", jax.typeof(a), " b:", jax.typeof(b))
    # --8<-- [end:operands]
    return a, b


def compare(line: Mesh, a: jax.Array, b: jax.Array) -> dict:
    # --8<-- [start:compare]
    expected = np.asarray(a) @ np.asarray(b)  # on one device
    compiled = {}
    for matmul in (gather_matmul, ring_matmul):
        product = matmul(a, b, line)
        same = np.allclose(product, expected, rtol=1e-5, atol=1e-5)
        print(f"-- {matmul.__name__}: {jax.typeof(product)}, equal to a @ b: {same}")
        compiled[matmul.__name__] = matmul.lower(a, b, line).compile()
        print_collectives(compiled[matmul.__name__])
    # --8<-- [end:compare]
    return compiled


def synchronous(compiled: dict) -> str:
    # --8<-- [start:synchronous]
    ring_hlo = compiled["ring_matmul"].as_text()
    print("synchronous collective-permute:", ring_hlo.count(" collective-permute("))
    print(
        "asynchronous start/done pairs: ", ring_hlo.count(" collective-permute-start(")
    )
    # --8<-- [end:synchronous]
    return ring_hlo


def main() -> None:
    from snippets.advanced.manual_control import varying

    line, _, _ = varying.build_line()
    a, b = build_operands(line)
    compiled = compare(line, a, b)
    synchronous(compiled)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
