"""Training with the pipeline: optax updates from the 1F1B step's gradients, against one device;
the bubble of a training step measured from the run; what each schedule holds in memory.

Run `python -m snippets.training.pipeline_training.train` to print what the page shows.
"""

# --8<-- [start:imports]
from fractions import Fraction

import jax
import optax
from jax import P
from jax.sharding import NamedSharding

# --8<-- [end:imports]
# On the page, these are defined by earlier blocks.
from snippets.training.pipeline.bubble import bubble_fraction
from snippets.training.pipeline.gpipe import split_microbatches
from snippets.training.pipeline.stages import build_model, place_stages
from snippets.training.pipeline_training.schedule import held, make_schedule
from snippets.training.pipeline_training.step import (
    check_step,
    pipeline_step,
    sequential_loss,
)


def train(x, y, graphdef, params, xs, ys, steps: dict) -> tuple[list, list]:
    # --8<-- [start:train]
    step = steps["1f1b"]
    optimizer = optax.adam(1e-3)
    update = jax.jit(optimizer.update)
    pipelined, single = params, jax.device_get(params)
    states = optimizer.init(pipelined), optimizer.init(single)
    losses = [], []
    for _ in range(5):
        loss, grads, _ = step(pipelined, xs, ys)
        updates, state = update(grads, states[0])
        pipelined, states = optax.apply_updates(pipelined, updates), (state, states[1])
        losses[0].append(float(loss))

        loss, grads = jax.value_and_grad(sequential_loss)(single, graphdef, x, y)
        updates, state = update(grads, states[1])
        single, states = optax.apply_updates(single, updates), (states[0], state)
        losses[1].append(float(loss))
    print("loss, 1F1B pipeline:", " ".join(f"{v:.4g}" for v in losses[0]))
    print("loss, one device:   ", " ".join(f"{v:.4g}" for v in losses[1]))
    gap = max(abs(a - b) / b for a, b in zip(*losses, strict=False))
    print(f"every step within a relative 1e-05: {gap <= 1e-5}")
    # --8<-- [end:train]
    return losses


def training_bubble(stages: list, x: jax.Array) -> dict:
    # --8<-- [start:training-bubble]
    found = {}
    print("schedule  stages  microbatches  measured  (S-1)/(M+S-1)")
    for kind in ["gpipe", "1f1b"]:
        for num_stages, num_microbatches in [(8, 4), (8, 16), (4, 8)]:
            mesh, graphdef, params = place_stages(stages[:num_stages])
            xs = split_microbatches(x, num_microbatches)
            xs = jax.device_put(xs, NamedSharding(mesh, P()))
            table = make_schedule(kind, num_stages, num_microbatches)
            step = pipeline_step(graphdef, mesh, table, num_microbatches)
            _, _, ran = step(params, xs, xs)
            measured = bubble_fraction(ran)  # (1)!
            formula = Fraction(num_stages - 1, num_microbatches + num_stages - 1)
            found[kind, num_stages, num_microbatches] = measured
            print(
                f"{kind:>8}  {num_stages:>6}  {num_microbatches:>12}  "
                f"{measured!s:>8}  {formula!s:>13}"
            )
    # --8<-- [end:training-bubble]
    return found


def memory(stages: list) -> dict:
    # --8<-- [start:memory]
    x = jax.random.normal(jax.random.key(3), (4096, 32))
    mesh, graphdef, params = place_stages(stages)
    found = {}
    print("microbatches  schedule  held (schedule)  temporaries (CPU)")
    for num_microbatches in [32, 64]:
        xs = split_microbatches(x, num_microbatches)
        xs = jax.device_put(xs, NamedSharding(mesh, P()))
        for kind in ["gpipe", "1f1b"]:
            table = make_schedule(kind, 8, num_microbatches)
            step = pipeline_step(graphdef, mesh, table, num_microbatches)
            compiled = step.lower(params, xs, xs).compile()
            temp = compiled.memory_analysis().temp_size_in_bytes
            found[num_microbatches, kind] = (max(held(table, 8)), temp)
            print(
                f"{num_microbatches:>12}  {kind:>8}  {max(held(table, 8)):>15}  "
                f"{temp / 1024:>13.0f} KiB"
            )
    # --8<-- [end:memory]
    return found


def main() -> None:
    stages, x, _ = build_model()
    found = check_step(stages, x)
    train(
        x,
        found["y"],
        found["graphdef"],
        found["params"],
        found["xs"],
        found["ys"],
        found["steps"],
    )
    training_bubble(stages, x)
    memory(stages)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
