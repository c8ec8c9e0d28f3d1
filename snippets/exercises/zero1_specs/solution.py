"""Reference solution of the exercise `zero1_specs` (ZeRO-1 on the FSDP page).

Run `python -m snippets.exercises.zero1_specs.solution` to print the specs for the MLP.
"""

# --8<-- [start:imports]
from jax import P
from jax.sharding import Mesh

# --8<-- [end:imports]


# --8<-- [start:solution]
def zero1_specs(shapes: dict, mesh: Mesh) -> dict:
    """ZeRO-1: parameters and gradients whole, Adam's moments split over "data"."""
    if "data" not in mesh.shape:
        raise ValueError(
            f"The mesh has axes {tuple(mesh.shape)}: ZeRO-1 splits the moments over "
            "an axis named 'data'."
        )
    n = mesh.shape["data"]
    moments = {}
    for name, shape in shapes.items():
        divisible = [d for d, size in enumerate(shape) if size % n == 0]
        if divisible:
            dim = max(divisible, key=lambda d: shape[d])  # (1)!
            moments[name] = P(*[None] * dim, "data")
        else:
            moments[name] = P()  # (2)!
    whole = {name: P() for name in shapes}  # (3)!
    return {"params": whole, "grads": dict(whole), "moments": moments}


# --8<-- [end:solution]


def main() -> None:
    import jax

    from snippets.models import D_HIDDEN, D_IN, D_OUT

    shapes = {
        "up.kernel": (D_IN, D_HIDDEN),
        "up.bias": (D_HIDDEN,),
        "down.kernel": (D_HIDDEN, D_OUT),
        "down.bias": (D_OUT,),
    }
    mesh = jax.make_mesh((8,), ("data",))
    for part, specs in zero1_specs(shapes, mesh).items():
        print(part, specs)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
