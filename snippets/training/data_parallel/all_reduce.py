"""The gradient all-reduce in the compiled data-parallel train step.

Run `python -m snippets.training.data_parallel.all_reduce` to print what the page shows.
"""

# On the page, `print_collectives` and `read_collectives` come with the count-collectives
# block, and the rest with the page's imports and the included model sections.
import jax
from flax import nnx

from snippets.hlo import print_collectives, read_collectives
from snippets.models import MLP


def compiled_step(step, model: MLP, optimizer: nnx.Optimizer, x, y):
    # --8<-- [start:compiled-step]
    compiled = step.lower(model, optimizer, x, y).compile()  # (1)!
    print_collectives(compiled)
    for c in read_collectives(compiled):
        print(f"one {c.kind} of: {c.result}")
    sizes = [p.size for p in jax.tree.leaves(nnx.state(model, nnx.Param))]
    print("parameters:", " + ".join(map(str, sizes)), "=", sum(sizes), "numbers")
    # --8<-- [end:compiled-step]
    return compiled


def main() -> None:
    from snippets.training.data_parallel import train

    mesh = train.build_mesh()
    data, x, y = train.first_batch(mesh)
    model, optimizer, step = train.unplaced_parameters(x, y)
    train.replicate(model, optimizer, mesh)
    train.train(model, optimizer, step, data, mesh)
    compiled_step(step, model, optimizer, x, y)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
