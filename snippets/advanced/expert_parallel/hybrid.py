"""Expert parallelism beside data parallelism and FSDP: a ("data", "expert") mesh.

Run `python -m snippets.advanced.expert_parallel.hybrid` to print what the page shows.
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax import P
from jax.sharding import AxisType, Mesh, NamedSharding

# On the page, these are defined by earlier blocks.
from snippets.advanced.expert_parallel.capacity import capacity, reference_moe
from snippets.advanced.expert_parallel.dispatch import from_experts, send, to_experts
from snippets.advanced.expert_parallel.layer import expert_mlp
from snippets.hlo import print_collectives


def hybrid_mesh() -> Mesh:
    # --8<-- [start:mesh]
    grid = jax.make_mesh(
        (2, 4), ("data", "expert"), axis_types=(AxisType.Explicit,) * 2
    )
    print(grid)
    # --8<-- [end:mesh]
    return grid


# --8<-- [start:specs]
TOKENS = P(("data", "expert"))  # (1)!


def hybrid_specs(fsdp):
    """Experts split over "expert"; with fsdp, their hidden dimension over "data" too."""
    if not fsdp:
        return {"router": P(), "w_in": P("expert"), "w_out": P("expert")}
    return {
        "router": P(),
        "w_in": P("expert", None, "data"),  # (experts, d_model, d_hidden)
        "w_out": P("expert", "data", None),  # (experts, d_hidden, d_model)
    }


def check_hybrid(mesh, params, fsdp, tokens=0):
    """Say what to change when the mesh, the experts or the sizes do not fit."""
    for axis in ("data", "expert"):
        if axis not in mesh.axis_names:
            raise ValueError(
                f"The mesh has axes {mesh.axis_names}: it needs one named '{axis}'."
            )
    data, expert = mesh.shape["data"], mesh.shape["expert"]
    experts, hidden = params["w_in"].shape[0], params["w_in"].shape[2]
    if experts % expert:
        raise ValueError(
            f"{experts} experts do not split over the {expert} devices of axis "
            f"'expert': use a multiple of {expert} experts."
        )
    if tokens % (data * expert):
        raise ValueError(
            f"{tokens} tokens do not split over {data} x {expert} devices: use a "
            f"multiple of {data * expert} tokens."
        )
    if fsdp and hidden % data:
        raise ValueError(
            f"FSDP splits d_hidden = {hidden} over the {data} devices of axis 'data': "
            f"use a d_hidden that is a multiple of {data}."
        )


def place_hybrid(params, mesh, fsdp):
    check_hybrid(mesh, params, fsdp)
    specs = hybrid_specs(fsdp)
    return {
        k: jax.device_put(w, NamedSharding(mesh, specs[k])) for k, w in params.items()
    }


# --8<-- [end:specs]


# --8<-- [start:layer]
def hybrid_layer(mesh, factor, fsdp=False):
    """The layer on a ("data", "expert") mesh: each device routes its own tokens, the
    all_to_alls run within its row of "expert" devices."""
    specs = hybrid_specs(fsdp)

    def body(x, params):
        w_in, w_out = params["w_in"], params["w_out"]
        if fsdp:  # (1)!
            w_in = jax.lax.all_gather(w_in, "data", axis=2, tiled=True)
            w_out = jax.lax.all_gather(w_out, "data", axis=1, tiled=True)
        mask, gate, sent = send(x, params["router"], factor)
        done = expert_mlp(to_experts(sent), w_in, w_out)  # (2)!
        return jnp.einsum("tec,ecd->td", mask * gate[:, None, None], from_experts(done))

    layer = jax.shard_map(body, mesh=mesh, in_specs=(TOKENS, specs), out_specs=TOKENS)

    def checked(x, params):
        check_hybrid(mesh, params, fsdp, tokens=x.shape[0])
        return layer(x, params)

    return checked


# --8<-- [end:layer]


def forward(grid, params, tokens):
    # --8<-- [start:forward]
    batch = jax.device_put(tokens, NamedSharding(grid, TOKENS))
    for fsdp in (False, True):
        out = jax.jit(hybrid_layer(grid, 1.0, fsdp))(
            batch, place_hybrid(params, grid, fsdp)
        )
        size = capacity(len(tokens) // 8, 8, 1.0)  # (1)!
        want = reference_moe(tokens, params, groups=8, capacity=size)
        within = bool(np.abs(np.asarray(out) - want).max() <= 1e-5)
        print(f"fsdp={fsdp}: {out.shape} {out.sharding.spec}, within 1e-05: {within}")
    # --8<-- [end:forward]
    return out, want


# --8<-- [start:step]
def one_device_moe(x, params, groups, factor):
    """The same layer with no mesh: each group routed on its own, all experts local."""

    def group(g):
        mask, gate, sent = send(g, params["router"], factor)
        done = expert_mlp(sent, params["w_in"], params["w_out"])
        return jnp.einsum("tec,ecd->td", mask * gate[:, None, None], done)

    return jax.vmap(group)(x.reshape(groups, -1, x.shape[-1])).reshape(x.shape)


def loss_of(layer):
    return lambda params, x, y: jnp.mean((layer(x, params) - y) ** 2)


def sgd_step(layer, lr=0.1):
    """One step of SGD on a squared error of the layer's output."""

    @jax.jit
    def step(params, x, y):
        loss, grads = jax.value_and_grad(loss_of(layer))(params, x, y)
        return jax.tree.map(lambda w, g: w - lr * g, params, grads), loss, grads

    return step


# --8<-- [end:step]


def train(grid, params, tokens):
    # --8<-- [start:train]
    targets = jax.random.normal(jax.random.key(2), tokens.shape)
    one_device = jax.value_and_grad(loss_of(lambda x, p: one_device_moe(x, p, 8, 1.0)))
    want_loss, want = one_device(jax.device_get(params), tokens, targets)  # (1)!
    batch, goal = (
        jax.device_put(a, NamedSharding(grid, TOKENS)) for a in (tokens, targets)
    )
    for fsdp in (False, True):
        step = sgd_step(hybrid_layer(grid, 1.0, fsdp))
        new, loss, grads = step(place_hybrid(params, grid, fsdp), batch, goal)
        gap = max(np.abs(grads[k] - want[k]).max() for k in grads)
        same = bool(abs(loss - want_loss) <= 1e-6 and gap <= 1e-6)
        print(f"fsdp={fsdp}: loss and gradients as on one device, within 1e-06: {same}")
        for k, g in grads.items():
            block = g.addressable_shards[0].data.shape
            print(f"  grad {k:<7}{g.sharding.spec!s:<28}per device {block}")
    # --8<-- [end:train]
    return new, grads, want, targets


def compiled_steps(grid, params, tokens, targets):
    # --8<-- [start:hlo]
    batch, goal = (
        jax.device_put(a, NamedSharding(grid, TOKENS)) for a in (tokens, targets)
    )
    programs = {}
    for fsdp in (False, True):
        step = sgd_step(hybrid_layer(grid, 1.0, fsdp))
        placed = place_hybrid(params, grid, fsdp)
        programs[fsdp] = step.lower(placed, batch, goal).compile()
        print(f"fsdp={fsdp}:")
        print_collectives(programs[fsdp], per_collective=True)
    # --8<-- [end:hlo]
    return programs


def main() -> None:
    from snippets.advanced.expert_parallel import layer

    params, tokens, _ = layer.build(layer.expert_mesh())
    grid = hybrid_mesh()
    forward(grid, params, tokens)
    _, _, _, targets = train(grid, params, tokens)
    compiled_steps(grid, params, tokens, targets)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
