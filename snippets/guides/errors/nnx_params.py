"""The Flax NNX error: parameters with a sharding annotation, created without a mesh.

Run `python -m snippets.guides.errors.nnx_params` to print what the page shows.
"""

# --8<-- [start:imports]
import jax
from flax import nnx

# --8<-- [end:imports]

Mesh = jax.sharding.Mesh  # for the type hints; the page's code does not use it


def without_mesh() -> object:
    # --8<-- [start:without-mesh]
    lecun = nnx.initializers.lecun_normal()
    kernel_init = nnx.with_partitioning(lecun, (None, "x"))
    try:
        nnx.Linear(4, 8, kernel_init=kernel_init, rngs=nnx.Rngs(0))
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:without-mesh]
    return kernel_init


def under_mesh(line: Mesh, kernel_init) -> nnx.Linear:
    # --8<-- [start:under-mesh]
    with jax.set_mesh(line):
        layer = nnx.Linear(4, 8, kernel_init=kernel_init, rngs=nnx.Rngs(0))
    kernel = layer.kernel[...]
    block = kernel.addressable_shards[0].data.shape
    print(jax.typeof(kernel), "each device holds", block)
    # --8<-- [end:under-mesh]
    return layer


def main() -> None:
    from snippets.guides.errors.device_setup import meshes_that_fit

    _, line, _ = meshes_that_fit()
    kernel_init = without_mesh()
    under_mesh(line, kernel_init)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
