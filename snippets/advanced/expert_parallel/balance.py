"""A load-balancing loss for the router: the Switch Transformer's auxiliary loss, over all
the tokens of the batch while each device holds only its own group.

Run `python -m snippets.advanced.expert_parallel.balance` to print what the page shows.
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax import P
from jax.sharding import Mesh

# On the page, these are defined by earlier blocks.
from snippets.advanced.expert_parallel.capacity import expert_load
from snippets.advanced.expert_parallel.layer import route
from snippets.hlo import print_collectives


# --8<-- [start:aux-loss]
def balance_loss(mesh, experts):
    """experts * sum_e (fraction of tokens routed to e) * (mean probability of e)."""
    if "expert" not in mesh.axis_names:
        raise ValueError(
            f"The mesh has axes {mesh.axis_names}: name one of them 'expert'."
        )

    def body(x, router):
        probs = jax.nn.softmax(x @ router, axis=-1)  # (tokens of this group, experts)
        expert, _ = route(x, router)
        counts = jnp.bincount(expert, length=experts)  # (1)!
        counts, prob_sums = jax.lax.psum((counts, probs.sum(axis=0)), "expert")  # (2)!
        tokens = counts.sum()
        return experts * jnp.sum(counts / tokens * prob_sums / tokens)

    loss_of = jax.jit(
        jax.shard_map(body, mesh=mesh, in_specs=(P("expert"), P()), out_specs=P())
    )

    def checked(x, router):
        if router.shape[-1] != experts:
            raise ValueError(
                f"The router scores {router.shape[-1]} experts but the loss was made "
                f"for {experts}: call balance_loss(mesh, experts={router.shape[-1]})."
            )
        if x.shape[0] == 0:
            raise ValueError(
                "The batch has no tokens, so no expert has a fraction of them: "
                "give the loss at least one token per device."
            )
        return loss_of(x, router)

    return checked


# --8<-- [end:aux-loss]


# --8<-- [start:balance-reference]
def reference_balance(x, router):
    """The same loss on one device, in NumPy, over all the tokens at once."""
    logits = np.asarray(x, np.float64) @ np.asarray(router, np.float64)
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    experts = probs.shape[1]
    fraction = np.bincount(probs.argmax(axis=1), minlength=experts) / len(probs)
    return experts * np.sum(fraction * probs.mean(axis=0))


# --8<-- [end:balance-reference]


def against_numpy(x: jax.Array, tokens: jax.Array, params: dict, mesh: Mesh):
    # --8<-- [start:balance-check]
    aux_loss = balance_loss(mesh, experts=8)
    sharded = float(aux_loss(x, params["router"]))
    on_one = reference_balance(tokens, params["router"])
    print(
        f"sharded {sharded:.3f}, NumPy {on_one:.3f}, within 1e-05: "
        f"{abs(sharded - on_one) <= 1e-5}"
    )
    print_collectives(jax.jit(aux_loss).lower(x, params["router"]).compile())
    # --8<-- [end:balance-check]
    return aux_loss, sharded, on_one


def unbalanced(x: jax.Array, params: dict, aux_loss):
    # --8<-- [start:unbalanced]
    def report(name, router):
        """The loss, and the tokens dropped at a capacity factor of 1."""
        _, routed, kept = expert_load(x, router, groups=8, factor=1.0)
        print(
            f"{name:<22}loss {float(aux_loss(x, router)):.3f}, "
            f"{(routed - kept).sum():>2} of 256 dropped, busiest expert "
            f"{routed.max():>3} tokens"
        )

    report("the page's router", params["router"])
    for scale in (4.0, 8.0):
        skewed_router = params["router"].at[:, 0].multiply(scale)  # (1)!
        report(f"expert 0's column x{scale:g}", skewed_router)
    # --8<-- [end:unbalanced]
    return report


def descend(x: jax.Array, params: dict, aux_loss, report):
    # --8<-- [start:descend]
    slope = jax.jit(jax.grad(lambda router: aux_loss(x, router)))  # (1)!
    router = params["router"].at[:, 0].multiply(4.0)
    for step in range(13):
        if step % 4 == 0:
            report(f"after {step} steps", router)
        router = router - 2.0 * slope(router)
    # --8<-- [end:descend]
    return router


def main() -> None:
    from snippets.advanced.expert_parallel import layer

    mesh = layer.expert_mesh()
    params, tokens, x = layer.build(mesh)
    aux_loss, _, _ = against_numpy(x, tokens, params, mesh)
    report = unbalanced(x, params, aux_loss)
    descend(x, params, aux_loss, report)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
