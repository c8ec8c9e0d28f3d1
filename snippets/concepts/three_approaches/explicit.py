"""Explicit: the shardings are in the types, and the contraction asks for out_sharding.

Run `python -m snippets.concepts.three_approaches.explicit` to print what the page shows.
"""

# --8<-- [start:imports]
import jax
import jax.numpy as jnp
import numpy as np
from jax import P
from jax.sharding import AxisType

# --8<-- [end:imports]
# isort: split
from snippets.concepts.three_approaches.layer import dense, place_layer

# On the page, earlier blocks define these.
from snippets.hlo import print_collectives


def place_on_explicit_mesh(x, W, b) -> tuple:
    # --8<-- [start:explicit-mesh]
    explicit_mesh = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Explicit,))
    x_exp, W_exp, b_exp = place_layer(explicit_mesh, x, W, b)
    for name, value in [("x", x_exp), ("W", W_exp), ("b", b_exp)]:
        print(f"{name}: {jax.typeof(value)}")
    # --8<-- [end:explicit-mesh]
    return explicit_mesh, x_exp, W_exp, b_exp


def ambiguous(x_exp, W_exp, b_exp) -> None:
    # --8<-- [start:ambiguous]
    @jax.jit
    def dense_typed(x, W, b):
        print("traced with", jax.typeof(x), jax.typeof(W), jax.typeof(b))
        return dense(x, W, b)

    try:
        dense_typed(x_exp, W_exp, b_exp)
    except Exception as err:  # ShardingTypeError, not exported by jax
        print(f"{type(err).__name__}: {err}")
    # --8<-- [end:ambiguous]


def run_explicit(explicit_mesh, x_exp, W_exp, b_exp, reference: np.ndarray) -> tuple:
    # --8<-- [start:explicit]
    @jax.jit
    def dense_explicit(x, W, b):
        y = jnp.matmul(x, W, out_sharding=P())  # (1)!
        print("x @ W:", jax.typeof(y))
        return jax.nn.sigmoid(y + b)

    with jax.set_mesh(explicit_mesh):  # (2)!
        explicit_out = dense_explicit(x_exp, W_exp, b_exp)
        explicit_compiled = dense_explicit.lower(x_exp, W_exp, b_exp).compile()
    print(np.asarray(explicit_out).round(4))
    print("matches NumPy:", np.allclose(explicit_out, reference, rtol=1e-6))
    print("output type:", jax.typeof(explicit_out))
    print_collectives(explicit_compiled)
    # --8<-- [end:explicit]
    return explicit_out, explicit_compiled


def main() -> None:
    from snippets.concepts.three_approaches import layer

    x, W, b, reference = layer.make_data()
    explicit_mesh, x_exp, W_exp, b_exp = place_on_explicit_mesh(x, W, b)
    ambiguous(x_exp, W_exp, b_exp)
    run_explicit(explicit_mesh, x_exp, W_exp, b_exp, reference)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
