"""A training step through the pipeline: any schedule table run with shard_map and ppermute,
its loss and gradients held against one device.

Run `python -m snippets.training.pipeline_training.step` to print what the page shows.
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
from snippets.training.pipeline.gpipe import split_microbatches
from snippets.training.pipeline.stages import build_model, place_stages, run_sequential
from snippets.training.pipeline_training.schedule import (
    check_schedule,
    held,
    make_schedule,
)

# --8<-- [start:as-arrays]
IDLE, FORWARD, BACKWARD = 0, 1, 2


def as_arrays(table: dict, num_stages: int, num_microbatches: int):
    """The table as two (stages, steps) integer arrays, one row per device: what to
    run (0 idle, 1 F, 2 B) and on which microbatch."""
    check_schedule(table, num_stages, num_microbatches)
    steps = max(step for step, _ in table) + 1
    ops = np.zeros((num_stages, steps), np.int32)
    microbatch = np.zeros((num_stages, steps), np.int32)
    for (step, stage), (op, m) in table.items():
        ops[stage, step] = FORWARD if op == "F" else BACKWARD
        microbatch[stage, step] = m
    return ops, microbatch


# --8<-- [end:as-arrays]


# --8<-- [start:pipeline-step]
def pipeline_step(
    graphdef: nnx.GraphDef, mesh: Mesh, table: dict, num_microbatches: int
):
    """Loss and gradients of mean((model(x) - y)**2), run as `table` says."""
    num_stages = mesh.shape["stage"]
    ops, microbatches = as_arrays(table, num_stages, num_microbatches)  # checks it
    slots = max(held(table, num_stages))  # (1)!
    next_stage = [(s, (s + 1) % num_stages) for s in range(num_stages)]
    previous_stage = [(s, (s - 1) % num_stages) for s in range(num_stages)]

    def per_stage(params, ops, microbatches, xs, ys):
        stage = jax.lax.axis_index("stage")
        first, last = stage == 0, stage == num_stages - 1
        params = jax.tree.map(lambda p: p[0], params)
        scale = 1.0 / ys.size  # the loss is a mean over every row and feature

        def varying(a):
            return jax.lax.pcast(a, "stage", to="varying")

        def apply(p, x):
            return nnx.merge(graphdef, p)(x)

        def forward(p, x, dy, y):  # (2)!
            return (
                apply(p, x),
                jnp.zeros_like(x),
                jax.tree.map(jnp.zeros_like, p),
                varying(0.0),
            )

        def backward(p, x, dy, y):  # (3)!
            out, pullback = jax.vjp(apply, p, x)
            error = out - y
            dy = jnp.where(last, 2 * scale * error, dy)
            dp, dx = pullback(dy)
            return out, dx, dp, jnp.where(last, scale * jnp.sum(error**2), 0.0)

        def idle(p, x, dy, y):
            zeros = jnp.zeros_like(x)
            return zeros, zeros, jax.tree.map(jnp.zeros_like, p), varying(0.0)

        def step(t, carry):
            acts, grads_in, tags, dparams, loss, ran = carry
            op, m = ops[0, t], microbatches[0, t]
            slot = m % slots
            x = jnp.where(first, xs[m], acts[slot])  # stage 0 reads the input
            tag = jnp.where(first, m, tags[slot])  # which microbatch the data is
            acts = jnp.where(first & (op == FORWARD), acts.at[slot].set(x), acts)
            out, dx, dp, part = jax.lax.switch(  # (4)!
                op, [idle, forward, backward], params, x, grads_in[slot], ys[m]
            )
            dparams = jax.tree.map(jnp.add, dparams, dp)
            loss = loss + part
            ran = ran.at[t].set(jnp.where(op == IDLE, -1, tag))  # (5)!
            sent = jnp.where(op == FORWARD, tag, -1)
            back = jnp.where(op == BACKWARD, tag, -1)
            out, sent = jax.lax.ppermute((out, sent), "stage", next_stage)  # (6)!
            dx, back = jax.lax.ppermute((dx, back), "stage", previous_stage)
            got, got_back = (sent >= 0) & ~first, (back >= 0) & ~last
            acts = jnp.where(got, acts.at[sent % slots].set(out), acts)
            tags = jnp.where(got, tags.at[sent % slots].set(sent), tags)
            grads_in = jnp.where(got_back, grads_in.at[back % slots].set(dx), grads_in)
            return acts, grads_in, tags, dparams, loss, ran

        buffer = jnp.zeros((slots, *xs.shape[1:]), xs.dtype)
        zero_grads = jax.tree.map(jnp.zeros_like, params)  # varying, as params are
        start = (
            varying(buffer),
            varying(buffer),
            varying(jnp.full(slots, -1)),
            zero_grads,
            varying(jnp.zeros(())),
            varying(jnp.full(ops.shape[1], -1)),
        )
        carry = jax.lax.fori_loop(0, ops.shape[1], step, start)
        _, _, _, dparams, loss, ran = carry
        return (
            jax.lax.psum(loss, "stage"),
            jax.tree.map(lambda g: g[None], dparams),
            ran[None],
        )

    run = jax.shard_map(
        per_stage,
        mesh=mesh,
        in_specs=(P("stage"), P("stage"), P("stage"), P(), P()),
        out_specs=(P(), P("stage"), P("stage")),
    )
    stage_rows = NamedSharding(mesh, P("stage"))

    @jax.jit
    def step(params, xs, ys):
        rows = jax.reshard((ops, microbatches), stage_rows)  # each device its row
        return run(params, *rows, xs, ys)

    return step


# --8<-- [end:pipeline-step]


# --8<-- [start:reference]
def sequential_loss(params: nnx.State, graphdef: nnx.GraphDef, x, y):
    """The same loss on one device: the stacked stages, one after another."""
    stages = [
        nnx.merge(graphdef, jax.tree.map(lambda p, s=s: p[s], params))
        for s in range(jax.tree.leaves(params)[0].shape[0])
    ]
    return jnp.mean((run_sequential(stages, x) - y) ** 2)


# --8<-- [end:reference]


def check_step(stages: list, x: jax.Array) -> dict:
    # --8<-- [start:check-step]
    y = jax.random.normal(jax.random.key(2), x.shape)  # the targets
    mesh, graphdef, params = place_stages(stages)
    replicated = NamedSharding(mesh, P())
    xs = jax.device_put(split_microbatches(x, 8), replicated)
    ys = jax.device_put(split_microbatches(y, 8), replicated)
    one_device = jax.device_get(params)  # the same weights, on the host
    want_loss, want_grads = jax.value_and_grad(sequential_loss)(
        one_device, graphdef, x, y
    )
    steps = {}
    for kind in ["gpipe", "1f1b"]:
        table = make_schedule(kind, 8, 8)
        steps[kind] = pipeline_step(graphdef, mesh, table, num_microbatches=8)
        loss, grads, _ran = steps[kind](params, xs, ys)
        gap = max(
            float(np.abs(np.asarray(g) - np.asarray(w)).max())
            for g, w in zip(
                jax.tree.leaves(grads), jax.tree.leaves(want_grads), strict=False
            )
        )
        print(
            f"{kind:>5}: loss within 1e-06 of one device: "
            f"{abs(float(loss) - float(want_loss)) <= 1e-6}, "
            f"gradients within 1e-06: {gap <= 1e-6}"
        )
    # --8<-- [end:check-step]
    return dict(
        y=y,
        mesh=mesh,
        graphdef=graphdef,
        params=params,
        xs=xs,
        ys=ys,
        steps=steps,
        want=(want_loss, want_grads),
    )


def main() -> None:
    stages, x, _ = build_model()
    check_step(stages, x)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
