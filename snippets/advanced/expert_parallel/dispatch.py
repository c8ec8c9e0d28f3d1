"""The layer over the "expert" axis: tokens go to their experts and back by all_to_all.

Run `python -m snippets.advanced.expert_parallel.dispatch` to print what the page shows.
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax import P
from jax.sharding import Mesh

# On the page, these are defined by earlier blocks.
from snippets.advanced.expert_parallel.capacity import capacity, reference_moe, slots
from snippets.advanced.expert_parallel.layer import SPECS, expert_mlp, route
from snippets.hlo import print_collectives


# --8<-- [start:exchange]
def send(x, router, factor):
    """On one device: route its tokens and pack them, expert by expert, into slots."""
    experts = router.shape[1]
    expert, gate = route(x, router)
    mask, _ = slots(expert, experts, capacity(x.shape[0], experts, factor))
    return mask, gate, jnp.einsum("tec,td->ecd", mask, x)  # (1)!


def to_experts(sent):
    """(experts, C, d) on each device -> (its experts, devices * C, d)."""
    return jax.lax.all_to_all(sent, "expert", split_axis=0, concat_axis=1, tiled=True)


def from_experts(done):
    """The way back: (its experts, devices * C, d) -> (experts, C, d)."""
    return jax.lax.all_to_all(done, "expert", split_axis=1, concat_axis=0, tiled=True)


# --8<-- [end:exchange]


def dispatched(x: jax.Array, params: dict, mesh: Mesh) -> jax.Array:
    # --8<-- [start:buffers]
    def body(x, router):
        _, _, sent = send(x, router, factor=1.0)
        received = to_experts(sent)
        print("sent    ", jax.typeof(sent))  # (1)!
        print("received", jax.typeof(received))
        return received

    run = jax.shard_map(
        body, mesh=mesh, in_specs=(P("expert"), P()), out_specs=P("expert")
    )
    received = jax.jit(run)(x, params["router"])
    print("all devices:", received.shape, received.sharding.spec)
    filled = np.asarray(received).any(axis=-1)  # (experts, devices * capacity)
    print(
        "tokens expert e got from device j:", filled.reshape(8, 8, -1).sum(-1), sep="\n"
    )
    # --8<-- [end:buffers]
    return received


# --8<-- [start:layer]
def moe_layer(mesh, factor):
    """The layer as one compiled function of (x, params); x split over "expert"."""
    if "expert" not in mesh.axis_names:
        raise ValueError(
            f"The mesh has axes {mesh.axis_names}: name one of them 'expert'."
        )
    if factor <= 0:
        raise ValueError(f"The capacity factor must be positive, not {factor}.")

    def body(x, params):
        mask, gate, sent = send(x, params["router"], factor)
        received = to_experts(sent)  # this device's experts' tokens, from everyone
        done = expert_mlp(received, params["w_in"], params["w_out"])
        back = from_experts(done)  # the results, in the slots this device filled
        return jnp.einsum("tec,ecd->td", mask * gate[:, None, None], back)  # (1)!

    layer = jax.shard_map(
        body, mesh=mesh, in_specs=(P("expert"), SPECS), out_specs=P("expert")
    )
    return jax.jit(layer)


# --8<-- [end:layer]


def compare(x: jax.Array, tokens: jax.Array, params: dict, mesh: Mesh) -> jax.Array:
    # --8<-- [start:compare]
    for factor in (1.0, 2.0):
        y = moe_layer(mesh, factor)(x, params)
        size = capacity(len(x) // 8, 8, factor)
        expected = reference_moe(tokens, params, groups=8, capacity=size)
        zero = int((~np.asarray(y).any(axis=1)).sum())
        gap = np.abs(np.asarray(y) - expected).max()
        within = bool(gap <= 1e-5)
        print(f"factor {factor}: {zero} tokens out as zeros, within {1e-5:g}: {within}")
    print(y.shape, y.sharding.spec)
    # --8<-- [end:compare]
    return y


def nothing_dropped(x: jax.Array, tokens: jax.Array, params: dict, mesh: Mesh):
    # --8<-- [start:no-drops]
    y = moe_layer(mesh, factor=8.0)(x, params)  # (1)!
    expected = reference_moe(tokens, params, groups=8, capacity=None)
    gap = np.abs(np.asarray(y) - expected).max()
    print(f"capacity {capacity(len(x) // 8, 8, 8.0)}, within {1e-5:g}: {gap <= 1e-5}")
    # --8<-- [end:no-drops]
    return y, expected


def compiled_layer(x: jax.Array, params: dict, mesh: Mesh):
    # --8<-- [start:hlo]
    compiled = moe_layer(mesh, 1.0).lower(x, params).compile()
    print_collectives(compiled)
    # --8<-- [end:hlo]
    return compiled


def compiled_gradient(x: jax.Array, params: dict, mesh: Mesh):
    # --8<-- [start:backward]
    layer = moe_layer(mesh, 1.0)

    def loss(params, x):
        return jnp.mean(layer(x, params) ** 2)

    grads = jax.jit(jax.grad(loss)).lower(params, x).compile()
    print_collectives(grads)
    # --8<-- [end:backward]
    return grads


def main() -> None:
    from snippets.advanced.expert_parallel import layer

    mesh = layer.expert_mesh()
    params, tokens, x = layer.build(mesh)
    dispatched(x, params, mesh)
    compare(x, tokens, params, mesh)
    nothing_dropped(x, tokens, params, mesh)
    compiled_layer(x, params, mesh)
    compiled_gradient(x, params, mesh)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
