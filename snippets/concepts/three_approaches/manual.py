"""Manual: jax.shard_map, with the psum over the contracting dimension written by hand.

Run `python -m snippets.concepts.three_approaches.manual` to print what the page shows.
"""

# --8<-- [start:imports]
import jax
import numpy as np
from jax import P
from jax.sharding import Mesh

# --8<-- [end:imports]
# isort: split
from snippets.concepts.three_approaches.layer import dense

# On the page, earlier blocks define these.
from snippets.hlo import print_collectives


def run_manual(
    explicit_mesh: Mesh, x_exp, W_exp, b_exp, reference: np.ndarray
) -> tuple:
    # --8<-- [start:manual]
    def dense_block(x, W, b):  # (1)!
        print("one device:", jax.typeof(x), jax.typeof(W), jax.typeof(b))
        partial = x @ W  # this device's 4 inputs times its 4 rows of W
        total = jax.lax.psum(partial, "x")  # (2)!
        print("partial:", jax.typeof(partial), " after psum:", jax.typeof(total))
        return jax.nn.sigmoid(total + b)

    manual_layer = jax.jit(
        jax.shard_map(
            dense_block,
            mesh=explicit_mesh,
            in_specs=(P("x"), P("x", None), P()),
            out_specs=P(),  # (3)!
        )
    )
    manual_out = manual_layer(x_exp, W_exp, b_exp)
    print(np.asarray(manual_out).round(4))
    print("matches NumPy:", np.allclose(manual_out, reference, rtol=1e-6))
    manual_compiled = manual_layer.lower(x_exp, W_exp, b_exp).compile()
    print_collectives(manual_compiled)
    # --8<-- [end:manual]
    return manual_out, manual_compiled


def forgot_psum(explicit_mesh: Mesh, x_exp, W_exp, b_exp) -> dict:
    # --8<-- [start:forgot-psum]
    specs = dict(
        mesh=explicit_mesh, in_specs=(P("x"), P("x", None), P()), out_specs=P()
    )
    no_psum = jax.jit(jax.shard_map(dense, **specs))  # dense as the per-device body
    try:
        no_psum(x_exp, W_exp, b_exp)
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:forgot-psum]
    return specs


def unchecked(specs: dict, x_exp, W_exp, b_exp, reference: np.ndarray) -> jax.Array:
    # --8<-- [start:unchecked]
    unchecked = jax.jit(jax.shard_map(dense, **specs, check_vma=False))
    wrong = unchecked(x_exp, W_exp, b_exp)
    print(np.asarray(wrong).round(4))
    print("matches NumPy:", np.allclose(wrong, reference, rtol=1e-6))
    # --8<-- [end:unchecked]
    return wrong


def main() -> None:
    from snippets.concepts.three_approaches import explicit, layer

    x, W, b, reference = layer.make_data()
    explicit_mesh, x_exp, W_exp, b_exp = explicit.place_on_explicit_mesh(x, W, b)
    run_manual(explicit_mesh, x_exp, W_exp, b_exp, reference)
    specs = forgot_psum(explicit_mesh, x_exp, W_exp, b_exp)
    unchecked(specs, x_exp, W_exp, b_exp, reference)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
