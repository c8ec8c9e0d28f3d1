"""A training step too big for one GPU, measured before it runs, and the fixes, one by one.

Run `python -m snippets.guides.out_of_memory.step` to print what the page shows.
"""

# --8<-- [start:imports]
import dataclasses

import jax
import jax.numpy as jnp
import optax
from jax import P
from jax.ad_checkpoint import print_saved_residuals
from jax.sharding import NamedSharding

# --8<-- [end:imports]


# --8<-- [start:model]
@dataclasses.dataclass(frozen=True)
class Sizes:
    layers: int = 32
    width: int = 4096
    hidden: int = 16384
    batch: int = 16384  # rows of the global batch

    def __post_init__(self):
        for name, value in dataclasses.asdict(self).items():
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, not {value!r}.")


def forward(params, x, remat=False):
    """`layers` residual MLP blocks, x + gelu(x @ w1) @ w2, run by a scan."""

    def block(x, weights):
        w1, w2 = weights
        return x + jax.nn.gelu(x @ w1) @ w2, None

    if remat:
        block = jax.checkpoint(block)  # (1)!
    x, _ = jax.lax.scan(block, x, (params["w1"], params["w2"]))
    return x


def loss(params, x, y, remat=False):
    return jnp.mean((forward(params, x, remat) - y) ** 2)


# --8<-- [end:model]


# --8<-- [start:fixes]
@dataclasses.dataclass(frozen=True)
class Fixes:
    donate: bool = False  # write the new state over the old one
    fsdp: bool = False  # split weights and optimizer state over the devices
    remat: bool = False  # recompute each block's activations in the backward pass
    microbatches: int = 1  # run the batch in slices, adding up their gradients


OPTIMIZER = optax.adam(1e-3)


def make_step(mesh, fixes: Fixes):
    """A jitted training step over `mesh`'s one axis, "data", with `fixes` applied."""
    k = fixes.microbatches
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"microbatches must be a positive integer, not {k!r}.")

    def slices(
        a,
    ):  # (batch, width) -> (k, batch / k, width); each device keeps its rows
        a = a.reshape(-1, k, a.shape[1], out_sharding=NamedSharding(mesh, P("data")))
        return jnp.moveaxis(a, 1, 0)

    def step(state, x, y):
        params, opt_state = state
        grad = jax.grad(loss)
        if k == 1:
            grads = grad(params, x, y, fixes.remat)
        else:

            def add(total, xy):
                g = grad(params, *xy, fixes.remat)
                return jax.tree.map(lambda t, gi: t + gi / k, total, g), None

            zeros = jax.tree.map(jnp.zeros_like, params)
            grads, _ = jax.lax.scan(add, zeros, (slices(x), slices(y)))
        updates, opt_state = OPTIMIZER.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state

    return jax.jit(step, donate_argnums=(0,) if fixes.donate else ())  # (1)!


def abstract_inputs(mesh, sizes: Sizes, fixes: Fixes):
    """The step's arguments as shapes and shardings: nothing is allocated."""
    n = mesh.shape["data"]
    if sizes.batch % (n * fixes.microbatches) or (fixes.fsdp and sizes.width % n):
        raise ValueError(
            f"{sizes} does not split over {n} devices with {fixes}: make batch a "
            f"multiple of devices x microbatches, and width (with FSDP) of devices."
        )
    split = NamedSharding(mesh, P(None, "data") if fixes.fsdp else P())  # (2)!
    whole = NamedSharding(mesh, P())

    def like(a):  # the optimizer's slots are laid out as the weights; its counter whole
        return jax.ShapeDtypeStruct(
            a.shape, a.dtype, sharding=split if a.ndim else whole
        )

    params = {
        "w1": jax.ShapeDtypeStruct(
            (sizes.layers, sizes.width, sizes.hidden), jnp.float32
        ),
        "w2": jax.ShapeDtypeStruct(
            (sizes.layers, sizes.hidden, sizes.width), jnp.float32
        ),
    }
    state = jax.tree.map(like, (params, jax.eval_shape(OPTIMIZER.init, params)))
    rows = jax.ShapeDtypeStruct(
        (sizes.batch, sizes.width), jnp.float32, sharding=NamedSharding(mesh, P("data"))
    )
    return state, rows, rows


# --8<-- [end:fixes]


# --8<-- [start:needed]
# An H100 SXM's memory, as its spec gives it, and the part JAX's allocator takes by default.
H100_BYTES = 84_978_434_048
BUDGET = int(H100_BYTES * 0.75)


def needed_bytes(compiled) -> dict[str, int]:
    """What one device holds while `compiled` runs, from its memory_analysis()."""
    m = compiled.memory_analysis()
    return {
        "arguments": m.argument_size_in_bytes,
        "new outputs": m.output_size_in_bytes - m.alias_size_in_bytes,  # (1)!
        "temporaries": m.temp_size_in_bytes,
    }


# --8<-- [end:needed]

# The page's steps, each adding one fix to the one before.
# --8<-- [start:steps]
# Each of the first three adds one fix to the row above; the last three each add to "+ FSDP".
STEPS = {
    "as written": Fixes(),
    "+ donate": Fixes(donate=True),
    "+ FSDP": Fixes(donate=True, fsdp=True),
    "+ remat": Fixes(donate=True, fsdp=True, remat=True),
    "+ 4 microbatches": Fixes(donate=True, fsdp=True, microbatches=4),
    "+ both": Fixes(donate=True, fsdp=True, remat=True, microbatches=4),
}


def compile_step(mesh, sizes: Sizes, fixes: Fixes):
    return make_step(mesh, fixes).lower(*abstract_inputs(mesh, sizes, fixes)).compile()


# --8<-- [end:steps]


def fixes_table(mesh) -> dict[str, dict[str, int]]:
    # --8<-- [start:fixes-table]
    gib = 2**30
    print(f"GiB per device, {jax.default_backend()} backend; budget {BUDGET / gib:.1f}")
    print(f"{'step':<18}{'arguments':>10}{'outputs':>9}{'temps':>8}{'total':>8}  fits")
    table = {}
    for name, fixes in STEPS.items():
        n = table[name] = needed_bytes(compile_step(mesh, Sizes(), fixes))
        total = sum(n.values())
        print(
            f"{name:<18}"
            + "".join(
                f"{v / gib:>{w}.1f}"
                for v, w in zip(n.values(), (10, 9, 8), strict=True)
            )
            + f"{total / gib:>8.1f}  {'yes' if total <= BUDGET else 'no'}"
        )
    # --8<-- [end:fixes-table]
    return table


def residuals():
    # --8<-- [start:residuals]
    small = Sizes(layers=2, width=16, hidden=64, batch=32)
    state, x, y = abstract_inputs(jax.make_mesh((1,), ("data",)), small, Fixes())
    params = state[0]
    print_saved_residuals(loss, params, x, y)
    print("with remat:")
    print_saved_residuals(lambda *args: loss(*args, remat=True), params, x, y)
    # --8<-- [end:residuals]


# --8<-- [start:activation-bytes]
def activation_bytes(sizes: Sizes, devices: int, remat: bool) -> int:
    """Bytes one device keeps for the backward pass: per block, its input (rows, width),
    and without remat five (rows, hidden) arrays from inside the block."""
    rows = sizes.batch // devices
    per_block = sizes.width if remat else sizes.width + 5 * sizes.hidden
    return 4 * sizes.layers * rows * per_block


TOLERANCE = 0.05  # how far the compiled programs may be from the formula
# --8<-- [end:activation-bytes]


def remat_check(mesh, table):
    # --8<-- [start:remat-check]
    n, sizes = mesh.shape["data"], Sizes()
    saved = table["+ FSDP"]["temporaries"] - table["+ remat"]["temporaries"]
    formula = activation_bytes(sizes, n, False) - activation_bytes(sizes, n, True)
    print(f"remat saved {saved / 2**30:.1f} GiB of temporaries per device")
    print(f"the formula says {formula / 2**30:.1f} GiB")
    print(f"within {TOLERANCE:.0%}: {abs(saved - formula) <= TOLERANCE * formula}")
    # --8<-- [end:remat-check]
    return saved, formula


def main():
    mesh = jax.make_mesh((8,), ("data",))
    table = fixes_table(mesh)
    residuals()
    remat_check(mesh, table)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
