"""What running out of memory looks like, and how the compiled program said so beforehand.

Run `python -m snippets.guides.out_of_memory.too_big` to print what the page shows.
"""

import jax
import jax.numpy as jnp
from jax import P
from jax.sharding import NamedSharding


def make_mesh():
    # --8<-- [start:mesh]
    mesh = jax.make_mesh((8,), ("data",))
    # --8<-- [end:mesh]
    return mesh


def too_big(mesh):
    # --8<-- [start:too-big]
    zeros = jax.jit(
        lambda: jnp.zeros((2**26, 2**24), jnp.float32),  # 4 PiB
        out_shardings=NamedSharding(mesh, P("data")),  # an eighth on each device
    )
    result = zeros()  # (1)!
    try:
        result.block_until_ready()
    except jax.errors.JaxRuntimeError as err:
        print(f"{type(err).__name__}: {err}")
    # --8<-- [end:too-big]
    return zeros


def predict(zeros):
    # --8<-- [start:predict]
    m = zeros.lower().compile().memory_analysis()  # compiles; runs nothing
    print(f"output bytes per device: {m.output_size_in_bytes:,}")
    print(f"that is {m.output_size_in_bytes / 2**40:,.0f} TiB")
    # --8<-- [end:predict]
    return m


def main():
    predict(too_big(make_mesh()))


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
