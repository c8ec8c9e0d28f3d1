"""What each strategy costs: bytes per device and collectives per step, compiled for CPU.

Run `python -m snippets.training.choosing.costs` to print what the page shows.
"""

# --8<-- [start:imports]
from dataclasses import dataclass

import jax
import optax
from flax import nnx
from rich.console import Console
from rich.table import Table

# --8<-- [end:imports]
# isort: split
from snippets.hlo import count_collectives, print_collectives, read_collectives
from snippets.models import D_HIDDEN, D_IN, D_OUT, MLP, batches, train_step

# On the page, these are defined by earlier blocks.
from snippets.training.choosing.strategies import STRATEGIES, place_batch, place_state


# --8<-- [start:compile-step]
def compile_step(model: MLP, optimizer: nnx.Optimizer, x, y):
    """train_step compiled once for these shardings, as a function of state."""
    graphdef, state = nnx.split((model, optimizer))

    def step(state, x, y):
        model, optimizer = nnx.merge(graphdef, state)
        loss = train_step(model, optimizer, x, y)
        return loss, nnx.state((model, optimizer))

    return jax.jit(step).lower(state, x, y).compile(), state


# --8<-- [end:compile-step]


# --8<-- [start:collective-bytes]
def collective_bytes(compiled) -> dict[str, tuple[int, int]]:
    """{collective: (how many, bytes of their results per device)} in a compiled step."""
    found = {}
    for c in read_collectives(compiled):  # (1)!
        count, total = found.get(c.kind, (0, 0))
        found[c.kind] = (count + 1, total + c.result_bytes)
    return found


# --8<-- [end:collective-bytes]


# --8<-- [start:measure]
def per_device(tree) -> int:
    """Bytes that one device holds of the arrays in `tree`."""
    arrays = jax.tree.leaves(tree)
    return sum(a.addressable_shards[0].data.nbytes for a in arrays)


@dataclass
class Run:
    params: int  # bytes of weights on one device
    adam: int  # bytes of Adam's mu, nu and count on one device
    temp: int  # XLA's scratch memory on one device during a step
    collectives: dict[str, tuple[int, int]]
    losses: list[float]
    model: MLP
    compiled: jax.stages.Compiled


def run_strategy(strategy: str, steps: int = 3, batch: int = 64) -> Run:
    """Place, compile once, measure, then train `steps` steps."""
    model = MLP(D_IN, D_HIDDEN, D_OUT, rngs=nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    place_state(strategy, model, optimizer)
    data = [place_batch(strategy, x, y) for x, y in batches(steps, batch)]
    compiled, state = compile_step(model, optimizer, *data[0])
    run = Run(
        params=per_device(nnx.state(model, nnx.Param)),
        adam=per_device(optimizer.opt_state),
        temp=compiled.memory_analysis().temp_size_in_bytes,
        collectives=collective_bytes(compiled),
        losses=[],
        model=model,
        compiled=compiled,
    )
    for x, y in data:
        loss, state = compiled(state, x, y)  # (1)!
        run.losses.append(float(loss))
    nnx.update((model, optimizer), state)
    return run


# --8<-- [end:measure]


def run_all() -> dict[str, Run]:
    # --8<-- [start:run-all]
    runs = {strategy: run_strategy(strategy) for strategy in STRATEGIES}
    # --8<-- [end:run-all]
    return runs


# --8<-- [start:formulas]
def formulas(strategy: str, W: int, b: int, A: int) -> dict[str, tuple]:
    """What each number in the table should be, as (formula, bytes).

    W: bytes of all the weights. b: bytes of down.bias, the one weight that the
    model axis leaves whole. A: bytes of the model's output for the whole batch.
    """
    shape, axes, _, _ = STRATEGIES[strategy]
    size = dict(zip(axes, shape, strict=True))
    d, m = size.get("data", 1), size.get("model", 1)
    if strategy == "FSDP":
        held = (f"W/{d}", W // d)  # every weight split over data
    elif m > 1:
        held = (f"(W-b)/{m} + b", (W - b) // m + b)  # split over model
    else:
        held = ("W", W)  # every weight on every device
    out = {"params": held, "adam": ("2 * params + 4", 2 * held[1] + 4)}
    reduce = []
    if m > 1:  # partial outputs of `down`, summed over model
        reduce.append((f"A/{d}" if d > 1 else "A", A // d))
    if d > 1:  # gradients of what a device holds, and the loss, over data
        reduce.append(
            (
                "W + 4" if strategy == "FSDP" else "params + 4",
                (W if strategy == "FSDP" else held[1]) + 4,
            )
        )
    out["all-reduce"] = (
        len(reduce),
        " + ".join(t for t, _ in reduce),
        sum(n for _, n in reduce),
    )
    if strategy == "FSDP":  # each weight gathered whole before use
        out["all-gather"] = (4, "W", W)
    return out


# --8<-- [end:formulas]


def fsdp_collectives(runs: dict[str, "Run"]) -> dict[str, int]:
    # --8<-- [start:fsdp-collectives]
    print_collectives(runs["FSDP"].compiled)
    # --8<-- [end:fsdp-collectives]
    return count_collectives(runs["FSDP"].compiled)


def model_sizes() -> tuple[int, int, int]:
    # --8<-- [start:sizes]
    model = MLP(D_IN, D_HIDDEN, D_OUT, rngs=nnx.Rngs(0))
    W = sum(a.nbytes for a in jax.tree.leaves(nnx.state(model, nnx.Param)))
    b = model.down.bias[...].nbytes
    A = 64 * D_OUT * 4  # the batch's output, float32
    print(f"W = {W:,} bytes of weights, b = {b}, A = {A:,}")
    # --8<-- [end:sizes]
    return W, b, A


def show_table(runs: dict[str, Run], W: int, b: int, A: int) -> None:
    # --8<-- [start:table]
    table = Table(
        title="One train step of the MLP, batch 64, per device",
        caption="compiled for the CPU backend",
        caption_style="italic",  # rich's default dims it to a grey under AA contrast
        title_justify="left",
        show_lines=True,
    )
    table.add_column("strategy")
    for column in ("weights", "Adam state", "temp"):
        table.add_column(column, justify="right")
    table.add_column("collectives")
    for strategy, run in runs.items():
        want = formulas(strategy, W, b, A)
        comm = []
        for op, (count, total) in run.collectives.items():
            comm.append(f"{count} {op}: {total:,}\n  = {want[op][1]}")
        table.add_row(
            strategy,
            f"{run.params:,}\n{want['params'][0]}",
            f"{run.adam:,}\n{want['adam'][0]}",
            f"{run.temp:,}",
            "\n".join(comm),
        )
    Console(width=96).print(table)
    # --8<-- [end:table]


def main() -> None:
    runs = run_all()
    fsdp_collectives(runs)
    W, b, A = model_sizes()
    show_table(runs, W, b, A)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
