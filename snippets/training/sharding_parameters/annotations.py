"""Sharding a model's parameters by annotating its initializers with nnx.with_partitioning.

Run `python -m snippets.training.sharding_parameters.annotations` to print what the page shows.
"""

import jax
from flax import nnx

# On the page, these are defined by earlier blocks.
from snippets.models import D_HIDDEN, D_IN, D_OUT, MLP
from snippets.training.sharding_parameters.path_rules import show_params

Mesh = jax.sharding.Mesh  # for the type hints; the page's code does not use it


# --8<-- [start:annotated-mlp]
class AnnotatedMLP(MLP):
    """The MLP, with a sharding annotation on each parameter's initializer."""

    def __init__(self, d_in, d_hidden, d_out, *, rngs):
        kernel = nnx.initializers.lecun_normal()  # (1)!
        bias = nnx.initializers.zeros_init()
        self.up = nnx.Linear(
            d_in,
            d_hidden,
            kernel_init=nnx.with_partitioning(kernel, (None, "model")),
            bias_init=nnx.with_partitioning(bias, ("model",)),
            rngs=rngs,
        )
        self.down = nnx.Linear(
            d_hidden,
            d_out,
            kernel_init=nnx.with_partitioning(kernel, ("model", None)),
            bias_init=nnx.with_partitioning(bias, (None,)),
            rngs=rngs,
        )


# --8<-- [end:annotated-mlp]


def without_mesh() -> None:
    # --8<-- [start:without-mesh]
    try:
        AnnotatedMLP(D_IN, D_HIDDEN, D_OUT, rngs=nnx.Rngs(0))
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:without-mesh]


def with_mesh(mesh: Mesh) -> AnnotatedMLP:
    # --8<-- [start:with-mesh]
    with jax.set_mesh(mesh):
        annotated = AnnotatedMLP(D_IN, D_HIDDEN, D_OUT, rngs=nnx.Rngs(0))
    show_params(nnx.state(annotated), "AnnotatedMLP, created under jax.set_mesh")
    # --8<-- [end:with-mesh]
    return annotated


def made_whole(mesh: Mesh) -> nnx.Linear:
    # --8<-- [start:made-whole]
    def reporting(init):
        """`init`, printing where the array it returns lives."""

        def made(key, shape, dtype):
            value = init(key, shape, dtype)
            held = {s.data.shape for s in value.addressable_shards}
            n = len(value.devices())
            print(f"initializer made {value.shape}; its {n} devices each hold {held}")
            return value

        return made

    kernel_init = reporting(nnx.initializers.lecun_normal())
    with jax.set_mesh(mesh):
        layer = nnx.Linear(
            D_IN,
            D_HIDDEN,
            kernel_init=nnx.with_partitioning(kernel_init, (None, "model")),
            rngs=nnx.Rngs(0),
        )
    kernel = layer.kernel[...]
    block = kernel.addressable_shards[0].data.shape
    print(f"then Flax lays it out as {kernel.sharding.spec}: device 0 keeps {block}")
    # --8<-- [end:made-whole]
    return layer


def partition_specs(annotated: AnnotatedMLP, model: MLP) -> None:
    # --8<-- [start:partition-specs]
    from_annotations = nnx.get_partition_spec(nnx.state(annotated))  # (1)!
    from_rules = nnx.get_partition_spec(nnx.state(model))  # (2)!
    print(f"{'parameter':<13}{'AnnotatedMLP':<19}MLP sharded by rules")
    for layer, kind in [("up", "kernel"), ("up", "bias"), ("down", "kernel")]:
        annotation = from_annotations[layer][kind].get_value()
        rule = from_rules[layer][kind].get_value()
        print(f"{layer + '/' + kind:<13}{annotation!s:<19}{rule}")
    same = [
        (jax.device_get(a) == jax.device_get(b)).all()
        for a, b in zip(
            jax.tree.leaves(nnx.state(annotated)),
            jax.tree.leaves(nnx.state(model)),
            strict=True,
        )
    ]
    print("same initial values as the MLP:", all(same))  # (3)!
    # --8<-- [end:partition-specs]


def main() -> None:
    from snippets.training.sharding_parameters import path_rules

    mesh = path_rules.build_mesh()
    model = path_rules.sharded_model(mesh)
    without_mesh()
    annotated = with_mesh(mesh)
    made_whole(mesh)
    partition_specs(annotated, model)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
