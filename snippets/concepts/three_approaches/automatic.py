"""Automatic: jax.jit on an Auto mesh; the compiler adds the all-reduce.

Run `python -m snippets.concepts.three_approaches.automatic` to print what the page shows (drawn
in the terminal; the site turns the drawing into SVG).
"""

# --8<-- [start:imports]
import jax
import numpy as np
from jax.sharding import AxisType

# --8<-- [end:imports]
# isort: split
from snippets.concepts.three_approaches.layer import dense, place_layer

# On the page, earlier blocks define these.
from snippets.hlo import print_collectives


def place_on_auto_mesh(x, W, b) -> tuple:
    # --8<-- [start:auto-mesh]
    auto_mesh = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Auto,))
    x_auto, W_auto, b_auto = place_layer(auto_mesh, x, W, b)
    jax.debug.visualize_array_sharding(W_auto)
    # --8<-- [end:auto-mesh]
    return auto_mesh, x_auto, W_auto, b_auto


def run_automatic(x_auto, W_auto, b_auto, reference: np.ndarray) -> tuple:
    # --8<-- [start:automatic]
    auto_layer = jax.jit(dense)  # (1)!
    auto_out = auto_layer(x_auto, W_auto, b_auto)
    print(np.asarray(auto_out).round(4))
    print("matches NumPy:", np.allclose(auto_out, reference, rtol=1e-6))
    print("output spec:", auto_out.sharding.spec)
    auto_compiled = auto_layer.lower(x_auto, W_auto, b_auto).compile()
    print_collectives(auto_compiled)
    # --8<-- [end:automatic]
    return auto_out, auto_compiled


def main() -> None:
    from snippets.concepts.three_approaches import layer

    x, W, b, reference = layer.make_data()
    _, x_auto, W_auto, b_auto = place_on_auto_mesh(x, W, b)
    run_automatic(x_auto, W_auto, b_auto, reference)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
