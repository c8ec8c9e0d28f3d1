"""Reference solution of the exercise `sharded_linear` (sharding parameters).

Run `python -m snippets.exercises.sharded_linear.solution` to see it.
"""

# --8<-- [start:imports]
import jax
from flax import nnx
from jax.sharding import Mesh

# --8<-- [end:imports]


# --8<-- [start:solution]
def sharded_linear(d_in: int, d_out: int, mesh: Mesh, seed: int) -> nnx.Linear:
    """nnx.Linear(d_in, d_out) laid out by its annotations: kernel columns, bias over "model"."""
    if "model" not in mesh.axis_names:
        raise ValueError(f"The mesh has axes {mesh.axis_names}: no 'model'.")
    n = mesh.shape["model"]
    if d_out % n:
        raise ValueError(
            f"d_out={d_out} does not split over the {n} devices of mesh axis "
            f"'model': use a multiple of {n}."
        )
    kernel_init = nnx.with_partitioning(  # (1)!
        nnx.initializers.lecun_normal(), (None, "model")
    )
    bias_init = nnx.with_partitioning(nnx.initializers.zeros_init(), ("model",))
    with jax.set_mesh(mesh):  # (2)!
        return nnx.Linear(
            d_in,
            d_out,
            kernel_init=kernel_init,
            bias_init=bias_init,
            rngs=nnx.Rngs(seed),  # (3)!
        )


# --8<-- [end:solution]


def main() -> None:
    from jax.sharding import AxisType

    mesh = jax.make_mesh((8,), ("model",), axis_types=(AxisType.Explicit,))
    layer = sharded_linear(32, 128, mesh, seed=0)
    print(jax.typeof(layer.kernel[...]), jax.typeof(layer.bias[...]))
    print(nnx.get_partition_spec(nnx.state(layer)))


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
