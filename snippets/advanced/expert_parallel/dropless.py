"""Dropless dispatch: every token reaches its expert, packed by a stable sort; and what
jax.lax.ragged_all_to_all, which would send only the tokens, does on the CPU backend.

Run `python -m snippets.advanced.expert_parallel.dropless` to print what the page shows.
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax import P
from jax.sharding import Mesh

# On the page, these are defined by earlier blocks.
from snippets.advanced.expert_parallel.capacity import reference_moe
from snippets.advanced.expert_parallel.dispatch import from_experts, to_experts
from snippets.advanced.expert_parallel.layer import SPECS, expert_mlp, route


# --8<-- [start:sort]
def on_experts(body, mesh, in_specs):
    if "expert" not in mesh.axis_names:
        raise ValueError(f"The mesh has axes {mesh.axis_names}: name one 'expert'.")
    return jax.jit(
        jax.shard_map(body, mesh=mesh, in_specs=in_specs, out_specs=P("expert"))
    )


def dropless_layer(mesh):
    """Room for every token: a whole group's slots per expert."""

    def body(x, params):
        expert, gate = route(x, params["router"])
        order = jnp.argsort(expert, stable=True)  # (1)!
        run = expert[order]
        rank = jnp.arange(len(x)) - jnp.searchsorted(run, run)
        place = jnp.zeros_like(expert).at[order].set(rank)  # (2)!
        shape = (params["router"].shape[1], *x.shape)
        sent = jnp.zeros(shape, x.dtype).at[expert, place].set(x)
        done = expert_mlp(to_experts(sent), params["w_in"], params["w_out"])
        return from_experts(done)[expert, place] * gate[:, None]

    return on_experts(body, mesh, (P("expert"), SPECS))


# --8<-- [end:sort]


def run_dropless(x: jax.Array, tokens: jax.Array, params: dict, mesh: Mesh):
    # --8<-- [start:dropless-check]
    y = np.asarray(dropless_layer(mesh)(x, params))
    gap = np.abs(y - reference_moe(tokens, params, groups=8, capacity=None)).max()
    print(f"{(~y.any(axis=1)).sum()} tokens out as zeros, within 1e-05: {gap <= 1e-5}")
    # --8<-- [end:dropless-check]
    return y, gap


# --8<-- [start:ragged]
def ragged_to_experts(x, expert):
    """Each expert (one per device) gets only the tokens that chose it."""
    experts = jax.lax.axis_size("expert")
    sizes = jnp.bincount(expert, length=experts)
    table = jax.lax.all_gather(sizes, "expert")
    me = jax.lax.axis_index("expert")
    lands = (jnp.cumsum(table, axis=0) - table)[me]  # (1)!
    room = jnp.zeros((experts * len(x), x.shape[1]), x.dtype)  # (2)!
    runs = x[jnp.argsort(expert, stable=True)], room, jnp.cumsum(sizes) - sizes
    return jax.lax.ragged_all_to_all(
        *runs, sizes, lands, table[:, me], axis_name="expert"
    )


# --8<-- [end:ragged]


def ragged_on_cpu(x: jax.Array, params: dict, mesh: Mesh):
    # --8<-- [start:ragged-cpu]
    ragged = on_experts(ragged_to_experts, mesh, P("expert"))
    try:
        ragged(x, route(x, params["router"])[0])
    except jax.errors.JaxRuntimeError as err:
        print("JaxRuntimeError:", str(err).split(". ")[0])
    # --8<-- [end:ragged-cpu]
    return ragged


def main() -> None:
    from snippets.advanced.expert_parallel import layer

    mesh = layer.expert_mesh()
    params, tokens, x = layer.build(mesh)
    run_dropless(x, tokens, params, mesh)
    ragged_on_cpu(x, params, mesh)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
