"""What one transformer layer keeps for the backward pass under each remat policy, and what
the compiled train step then allocates and computes.

Run `python -m snippets.advanced.remat.policies` to print what the page shows.
"""

# --8<-- [start:imports]
import contextlib
import io
import math
import re

import jax
import jax.numpy as jnp
from flax import nnx
from jax.ad_checkpoint import print_saved_residuals
from jax.sharding import AxisType

# --8<-- [end:imports]
from snippets.advanced.transformer.init import build_mesh, sharded_init
from snippets.advanced.transformer.model import REMAT_POLICIES, Block, Config
from snippets.advanced.transformer.step import (
    make_train_step,
    shard_batch,
    token_batches,
)


# --8<-- [start:one-block]
def one_block(cfg: Config, batch: int = 2):
    """`layer(params, x)`: one Block of `cfg` on one device, its parameters and an input."""
    if batch < 1:
        raise ValueError(f"batch must be a positive integer, not {batch!r}.")
    mesh = jax.make_mesh(
        (1, 1, 1),
        ("data", "fsdp", "tensor"),
        axis_types=(AxisType.Auto,) * 3,
        devices=jax.devices()[:1],
    )
    with (
        jax.sharding.use_abstract_mesh(mesh.abstract_mesh),
        nnx.use_eager_sharding(False),
    ):
        graphdef, params = nnx.split(Block(cfg, rngs=nnx.Rngs(0)))

    def layer(params, x):
        with jax.sharding.use_abstract_mesh(mesh.abstract_mesh):
            return nnx.merge(graphdef, params)(x)

    return layer, params, jnp.zeros((batch, cfg.seq, cfg.d_model))


def saved(layer, policy):
    """The layer as Config.remat = `policy` runs it inside the model's scan."""
    if policy is False:
        return layer
    return jax.checkpoint(layer, policy=REMAT_POLICIES.get(policy, policy))


# --8<-- [end:one-block]


# --8<-- [start:residuals]
BYTES = {"f32": 4, "bf16": 2, "i32": 4, "bool": 1}


def residuals(layer, params, x) -> list[str]:
    """What print_saved_residuals lists for `layer`, less its parameters (arguments the
    step holds anyway) and scalar literals, without the source locations."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        print_saved_residuals(lambda p, x: layer(p, x).sum(), params, x)
    lines = out.getvalue().splitlines()
    kept = [
        line for line in lines if "argument p" not in line and "literal" not in line
    ]
    return [re.sub(r" from \S+:\d+:\d+ \(.*\)$", "", line) for line in kept]  # (1)!


def residual_bytes(lines: list[str]) -> tuple[int, int]:
    """(bytes on the device, bytes in host memory) of residual lines."""
    on = {"device": 0, "host": 0}
    for line in lines:
        dtype, host, dims = re.match(r"(\w+)(<host>)?\[([\d,]*)\]", line).groups()
        size = BYTES[dtype] * math.prod(int(n) for n in dims.split(",") if n)
        on["host" if host else "device"] += size
    return on["device"], on["host"]


# --8<-- [end:residuals]


def show_residuals():
    # --8<-- [start:show-residuals]
    layer, params, x = one_block(Config())
    for policy in (False, True, "names"):
        lines = residuals(saved(layer, policy), params, x)
        device, _ = residual_bytes(lines)
        print(f"remat={policy!r}: {len(lines)} arrays, {device:,} bytes")
        if len(lines) < 8:
            print("\n".join("  " + line for line in lines))
    # --8<-- [end:show-residuals]


# --8<-- [start:policy-table]
PAGE_POLICIES = (False, True, "dots", "dots_no_batch", "names", "offload")


def policy_table(cfg: Config, mesh, policies=PAGE_POLICIES) -> dict:
    """Per policy: one layer's residuals (device, host), and the compiled step's
    temporaries and FLOPs per device."""
    per_device = 8 // (mesh.shape["data"] * mesh.shape["fsdp"])
    layer, params, x = one_block(cfg, batch=per_device)
    tokens = shard_batch(token_batches(cfg, steps=1, batch=8)[0], mesh)
    rows = {}
    for policy in policies:
        config = Config(**{**vars(cfg), "remat": policy})
        sharded = sharded_init(config, mesh)
        step = make_train_step(sharded, mesh).lower(sharded.abstract, tokens).compile()
        rows[policy] = (
            *residual_bytes(residuals(saved(layer, policy), params, x)),
            step.memory_analysis().temp_size_in_bytes,
            step.cost_analysis()["flops"],
        )
    return rows


def print_table(rows: dict) -> None:
    none_flops = rows[False][3]
    print(
        f"per device, {jax.default_backend()} backend; layer: one Block on one device"
    )
    print(
        f"{'remat':<16}{'layer keeps':>12}{'on host':>9}{'temporaries':>13}{'FLOPs':>9}"
    )
    for policy, (device, host, temp, flops) in rows.items():
        print(
            f"{policy!r:<16}{device:>12,}{host:>9,}{temp:>13,}"
            f"{flops / none_flops:>8.3f}x"
        )


# --8<-- [end:policy-table]


def show_table() -> dict:
    # --8<-- [start:show-table]
    rows = policy_table(Config(), build_mesh())
    print_table(rows)
    # --8<-- [end:show-table]
    return rows


def main() -> None:
    show_residuals()
    show_table()


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
