"""The model cut into stages, one stage per device, and the run it must reproduce.

Run `python -m snippets.training.pipeline.stages` to print what the page shows.
"""

# --8<-- [start:imports]
import jax
import numpy as np
from flax import nnx
from jax import P
from jax.sharding import AxisType, Mesh, NamedSharding

# --8<-- [end:imports]
# On the page, these are defined by earlier blocks.
from snippets.models import D_HIDDEN, D_IN, MLP


# --8<-- [start:make-stages]
def make_stages(num_stages: int, seed: int = 0) -> list[MLP]:
    """`num_stages` MLPs 32 -> 128 -> 32, to be run one after another."""
    if num_stages < 1:
        raise ValueError(f"need at least one stage, got {num_stages}.")
    rngs = nnx.Rngs(seed)
    return [MLP(D_IN, D_HIDDEN, D_IN, rngs=rngs) for _ in range(num_stages)]


def run_sequential(stages: list[MLP], x: jax.Array) -> jax.Array:
    """The model with no parallelism: each stage on the whole batch, in turn."""
    for stage in stages:
        x = stage(x)
    return x


# --8<-- [end:make-stages]


def build_model() -> tuple[list[MLP], jax.Array, jax.Array]:
    # --8<-- [start:sequential]
    stages = make_stages(8)
    x = jax.random.normal(jax.random.key(1), (64, D_IN))
    expected = run_sequential(stages, x)
    print(
        f"{len(stages)} stages, each {stages[0].up.kernel.shape} then "
        f"{stages[0].down.kernel.shape}"
    )
    print("input", x.shape, "-> output", expected.shape)
    # --8<-- [end:sequential]
    return stages, x, expected


# --8<-- [start:place-stages]
def place_stages(stages: list[MLP]) -> tuple[Mesh, nnx.GraphDef, nnx.State]:
    """A mesh axis "stage", and the stages' weights stacked and split on it."""
    num_stages, available = len(stages), len(jax.devices())
    if num_stages > available:
        raise ValueError(
            f"{num_stages} pipeline stages need {num_stages} devices, but "
            f"there are only {available}: use at most {available} stages, or "
            f"put several layers in each stage."
        )
    mesh = jax.make_mesh(
        (num_stages,),
        ("stage",),
        axis_types=(AxisType.Explicit,),
        devices=jax.devices()[:num_stages],
    )
    graphdef = nnx.graphdef(stages[0])  # (1)!
    stacked = jax.tree.map(
        lambda *leaves: np.stack(leaves), *[nnx.state(s) for s in stages]
    )  # (2)!
    params = jax.device_put(stacked, NamedSharding(mesh, P("stage")))
    return mesh, graphdef, params


# --8<-- [end:place-stages]


def show_placement(stages: list[MLP]) -> tuple[Mesh, nnx.GraphDef, nnx.State]:
    # --8<-- [start:show-placement]
    mesh, graphdef, params = place_stages(stages)
    kernel = params["up"]["kernel"][...]
    print(mesh)
    print("stacked up.kernel:", jax.typeof(kernel))
    for shard in kernel.addressable_shards[:3]:
        stage = shard.index[0].start
        print(f"  {shard.device} holds stage {stage}:", shard.data.shape)
    # --8<-- [end:show-placement]
    return mesh, graphdef, params


def too_many_stages() -> None:
    # --8<-- [start:too-many-stages]
    try:
        place_stages(make_stages(12))
    except ValueError as err:
        print(f"ValueError: {err}")
    # --8<-- [end:too-many-stages]


def main() -> None:
    stages, _, _ = build_model()
    show_placement(stages)
    too_many_stages()


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
