"""XLA's own collective matmul: the plain sharded product, with the compiler asked to split
its gather into steps that overlap the multiplication.

`sharded_matmul` is jitted twice with the mesh static, once plain and once with the option,
so that both can be lowered from `jax.ShapeDtypeStruct` arguments for a TPU or GPU target
(docs_build/compiled/advanced.py). Run
`python -m snippets.advanced.overlap.xla_matmul` to print what the page shows.
"""

# --8<-- [start:imports]
import jax
import jax.numpy as jnp
import numpy as np
from jax import P
from jax.sharding import Mesh, NamedSharding

# --8<-- [end:imports]
# the page includes it from the manual control page's module
from snippets.advanced.manual_control.collective_matmul import check_matmul

# --8<-- [start:xla-matmul]
# The compile option that asks each backend's XLA for its collective matmul.
COLLECTIVE_MATMUL = {
    "gpu": {"xla_gpu_threshold_for_windowed_einsum_mib": 0},
    "tpu": {"xla_tpu_all_gather_collective_matmul_mode": "post_spmd"},
}


def sharded_matmul(x, w, mesh: Mesh):
    """x @ w with x's rows and w's columns over "x", the product's columns over "x":
    each device needs all of x, and how it gets it is the compiler's choice."""
    check_matmul(x, w, mesh)
    return jnp.matmul(x, w, out_sharding=NamedSharding(mesh, P(None, "x")))


plain_matmul = jax.jit(sharded_matmul, static_argnames="mesh")
xla_collective_matmul = jax.jit(
    sharded_matmul, static_argnames="mesh", compiler_options=COLLECTIVE_MATMUL["gpu"]
)
# --8<-- [end:xla-matmul]


def run_on_cpu() -> tuple[str, str]:
    # --8<-- [start:run-on-cpu]
    line = jax.make_mesh((8,), ("x",))
    rng = np.random.default_rng(2)
    a = jax.device_put(
        rng.standard_normal((64, 16), np.float32), NamedSharding(line, P("x", None))
    )
    b = jax.device_put(
        rng.standard_normal((16, 32), np.float32), NamedSharding(line, P(None, "x"))
    )
    product = xla_collective_matmul(a, b, line)
    same = np.allclose(product, np.asarray(a) @ np.asarray(b), rtol=1e-5, atol=1e-5)
    print(f"{jax.typeof(product)}, equal to a @ b within 1e-05: {same}")
    asked = xla_collective_matmul.lower(a, b, line).compile().as_text()
    plain = plain_matmul.lower(a, b, line).compile().as_text()
    print("the CPU program is the one without the option:", asked == plain)
    print("all-gathers:", asked.count(" all-gather("), end=", ")
    print("collective-permutes:", asked.count(" collective-permute"))
    # --8<-- [end:run-on-cpu]
    return asked, plain


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    run_on_cpu()
