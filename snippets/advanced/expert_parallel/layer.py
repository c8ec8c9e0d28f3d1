"""A mixture-of-experts layer: the mesh, the parameters, the router and the experts.

Run `python -m snippets.advanced.expert_parallel.layer` to print what the page shows.
"""

# --8<-- [start:imports]
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import P
from jax.sharding import AxisType, Mesh, NamedSharding

# --8<-- [end:imports]


def expert_mesh() -> Mesh:
    # --8<-- [start:mesh]
    mesh = jax.make_mesh((8,), ("expert",), axis_types=(AxisType.Explicit,))
    print(mesh)
    # --8<-- [end:mesh]
    return mesh


# --8<-- [start:init]
def init_moe(key, d_model, d_hidden, experts):
    """A router (d_model -> experts) and one small MLP per expert, stacked."""
    if min(d_model, d_hidden, experts) < 1:
        raise ValueError(
            f"d_model, d_hidden and experts must be at least 1, not "
            f"{d_model}, {d_hidden} and {experts}."
        )
    k_router, k_in, k_out = jax.random.split(key, 3)
    return {
        "router": jax.random.normal(k_router, (d_model, experts)) / math.sqrt(d_model),
        "w_in": jax.random.normal(k_in, (experts, d_model, d_hidden))
        / math.sqrt(d_model),
        "w_out": jax.random.normal(k_out, (experts, d_hidden, d_model))
        / math.sqrt(d_hidden),
    }


SPECS = {"router": P(), "w_in": P("expert"), "w_out": P("expert")}  # (1)!


def place_moe(params, mesh):
    """Put the experts' weights on the mesh, split over its "expert" axis."""
    if "expert" not in mesh.axis_names:
        raise ValueError(
            f"The mesh has axes {mesh.axis_names}: name one of them 'expert'."
        )
    devices, experts = mesh.shape["expert"], params["router"].shape[1]
    if experts % devices:
        raise ValueError(
            f"{experts} experts do not split over the {devices} devices of axis "
            f"'expert': use a multiple of {devices} experts."
        )
    return {
        name: jax.device_put(w, NamedSharding(mesh, SPECS[name]))
        for name, w in params.items()
    }


# --8<-- [end:init]


def build(mesh: Mesh):
    # --8<-- [start:params]
    params = place_moe(init_moe(jax.random.key(0), 16, 32, experts=8), mesh)
    tokens = jax.random.normal(jax.random.key(1), (256, 16))
    x = jax.device_put(tokens, NamedSharding(mesh, P("expert")))  # (1)!
    for name, w in {**params, "x": x}.items():
        block = w.addressable_shards[0].data.shape
        print(f"{name:<8}{w.shape!s:<13}{w.sharding.spec!s:<22}per device {block}")
    # --8<-- [end:params]
    return params, tokens, x


# --8<-- [start:route]
def route(x, router):
    """Top-1 routing: each token's expert, and the router's probability for it."""
    probs = jax.nn.softmax(x @ router, axis=-1)  # (tokens, experts)
    expert = jnp.argmax(probs, axis=-1)
    gate = jnp.take_along_axis(probs, expert[:, None], axis=-1)[:, 0]
    return expert, gate


def expert_mlp(tokens, w_in, w_out):
    """Expert e's MLP on tokens[e], for every expert at once: (experts, slots, d)."""
    hidden = jax.nn.relu(jnp.einsum("esd,edh->esh", tokens, w_in))
    return jnp.einsum("esh,ehd->esd", hidden, w_out)


# --8<-- [end:route]


def show_routes(params, tokens: jax.Array):
    # --8<-- [start:show-routes]
    expert, gate = route(tokens[:8], params["router"])
    print("expert", expert)
    print("gate  ", np.asarray(gate).round(2))
    # --8<-- [end:show-routes]
    return expert, gate


def main() -> None:
    mesh = expert_mesh()
    params, tokens, _ = build(mesh)
    show_routes(params, tokens)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
