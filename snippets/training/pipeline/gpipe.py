"""The GPipe schedule: microbatches move from stage to stage with ppermute in shard_map.

Run `python -m snippets.training.pipeline.gpipe` to print what the page shows.
"""

# --8<-- [start:imports]
import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from jax import P
from jax.sharding import Mesh, NamedSharding

# --8<-- [end:imports]
# On the page, these are defined by earlier blocks.
from snippets.hlo import count_collectives, print_collectives
from snippets.training.pipeline.stages import build_model, place_stages


# --8<-- [start:microbatches]
def split_microbatches(x: jax.Array, num_microbatches: int) -> jax.Array:
    """(batch, ...) -> (num_microbatches, batch // num_microbatches, ...)."""
    batch = x.shape[0]
    if num_microbatches < 1 or batch % num_microbatches:
        raise ValueError(
            f"a batch of {batch} cannot be cut into {num_microbatches} equal "
            f"microbatches: choose a number of microbatches that divides "
            f"{batch}."
        )
    return x.reshape(num_microbatches, batch // num_microbatches, *x.shape[1:])


# --8<-- [end:microbatches]


# --8<-- [start:gpipe]
def gpipe(graphdef: nnx.GraphDef, mesh: Mesh, num_microbatches: int):
    """A forward pass over the stages on mesh axis "stage", GPipe style."""
    num_stages = mesh.shape["stage"]
    num_steps = num_microbatches + num_stages - 1
    ring = [(s, (s + 1) % num_stages) for s in range(num_stages)]  # (1)!

    def per_stage(params, xs):  # (2)!
        stage = jax.lax.axis_index("stage")
        layer = nnx.merge(graphdef, jax.tree.map(lambda p: p[0], params))

        def step(t, carry):
            h, tag, acts, ran = carry
            first = stage == 0  # stage 0 takes microbatch t from the input
            h = jnp.where(first, xs[jnp.minimum(t, num_microbatches - 1)], h)
            tag = jnp.where(first, jnp.where(t < num_microbatches, t, -1), tag)
            h = layer(h)  # (3)!
            acts = jnp.where(tag >= 0, acts.at[tag].set(h), acts)
            ran = ran.at[t].set(tag)  # (4)!
            h, tag = jax.lax.ppermute((h, tag), "stage", ring)  # (5)!
            return h, tag, acts, ran

        def varying(a):  # (6)!
            return jax.lax.pcast(a, "stage", to="varying")

        start = (
            varying(jnp.zeros_like(xs[0])),
            varying(jnp.array(-1)),  # -1: no microbatch
            varying(jnp.zeros_like(xs)),
            varying(jnp.full(num_steps, -1)),
        )
        _, _, acts, ran = jax.lax.fori_loop(0, num_steps, step, start)
        return acts[None], ran[None]

    return jax.jit(
        jax.shard_map(
            per_stage,
            mesh=mesh,
            in_specs=(P("stage"), P()),
            out_specs=(P("stage"), P("stage")),
        )
    )


# --8<-- [end:gpipe]


def run_pipeline(stages: list, x: jax.Array, expected: jax.Array) -> tuple:
    # --8<-- [start:run-pipeline]
    mesh, graphdef, params = place_stages(stages)
    xs = jax.device_put(split_microbatches(x, 4), NamedSharding(mesh, P()))
    forward = gpipe(graphdef, mesh, num_microbatches=4)
    acts, ran = forward(params, xs)
    print("acts:", jax.typeof(acts))  # (stage, microbatch, rows, features)
    output = np.asarray(acts)[-1].reshape(x.shape)  # the last stage's results
    gap = np.abs(output - expected).max()
    print(f"within {1e-5:g} of run_sequential: {gap <= 1e-5}")
    # --8<-- [end:run-pipeline]
    return mesh, graphdef, params, forward, xs, ran


def collectives(forward, params: nnx.State, xs: jax.Array) -> dict:
    # --8<-- [start:collectives]
    print_collectives(forward.lower(params, xs).compile())
    # --8<-- [end:collectives]
    return count_collectives(forward.lower(params, xs).compile())


# --8<-- [start:show-schedule]
def show_schedule(ran: jax.Array) -> None:
    """A row per stage, a column per step: the microbatch it ran, or ·."""
    ran = np.asarray(ran)
    print("step    " + " ".join(f"{t:>2}" for t in range(ran.shape[1])))
    for stage, row in enumerate(ran):
        cells = [f"{m:>2}" if m >= 0 else " ·" for m in row]
        print(f"stage {stage} " + " ".join(cells))


# --8<-- [end:show-schedule]


def schedule(ran: jax.Array) -> None:
    # --8<-- [start:schedule]
    show_schedule(ran)
    # --8<-- [end:schedule]


def main() -> None:
    stages, x, expected = build_model()
    _, _, params, forward, xs, ran = run_pipeline(stages, x, expected)
    collectives(forward, params, xs)
    schedule(ran)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
