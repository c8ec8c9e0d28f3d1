"""Reference solution of the exercise `moe_dispatch` (expert parallelism).

Run `python -m snippets.exercises.moe_dispatch.solution` to see it.
"""

# --8<-- [start:imports]
import jax
import jax.numpy as jnp
from jax import P
from jax.sharding import Mesh

# --8<-- [end:imports]


# --8<-- [start:solution]
def moe_dispatch(
    tokens: jax.Array, expert_index: jax.Array, capacity: int, mesh: Mesh
) -> jax.Array:
    """Send every token to the device of its expert, at most `capacity` tokens per
    expert from each device, and return what each expert received.

    One expert per device of the mesh's axis "expert". Returns shape
    (devices, devices * capacity, d), split P("expert"): row e is what expert e
    received, slots j * capacity onwards the tokens device j sent it, zeros where none.
    """
    if mesh.axis_names != ("expert",):
        raise ValueError(
            f"This needs a 1-D mesh with axis 'expert', not {mesh.axis_names}."
        )
    n = mesh.shape["expert"]
    if tokens.ndim != 2 or tokens.shape[0] % n:
        raise ValueError(
            f"tokens must be (tokens, d) with a multiple of {n} tokens, "
            f"not {tokens.shape}."
        )
    if expert_index.shape != tokens.shape[:1]:
        raise ValueError(
            f"expert_index must hold one expert per token, shape {tokens.shape[:1]}, "
            f"not {expert_index.shape}."
        )
    if capacity < 1:
        raise ValueError(f"capacity must be at least 1, not {capacity}.")

    def send(group, expert):
        chosen = jax.nn.one_hot(expert, n, dtype=jnp.int32)  # (1)!
        earlier = jnp.cumsum(chosen, axis=0) - chosen
        position = jnp.sum(earlier * chosen, axis=1)  # place in its expert's queue
        slot = jax.nn.one_hot(position, capacity, dtype=group.dtype)  # (2)!
        mask = chosen[:, :, None].astype(group.dtype) * slot[:, None, :]
        buffer = jnp.einsum("tec,td->ecd", mask, group)  # (experts, capacity, d)
        return jax.lax.all_to_all(  # (3)!
            buffer, "expert", split_axis=0, concat_axis=1, tiled=True
        )

    run = jax.shard_map(
        send, mesh=mesh, in_specs=(P("expert"), P("expert")), out_specs=P("expert")
    )
    return jax.jit(run)(tokens, expert_index)  # (4)!


# --8<-- [end:solution]


def main() -> None:
    from jax.sharding import AxisType, NamedSharding

    mesh = jax.make_mesh((8,), ("expert",), axis_types=(AxisType.Explicit,))
    split = NamedSharding(mesh, P("expert"))
    tokens = jax.device_put(jnp.arange(1.0, 33.0).reshape(32, 1), split)
    expert_index = jax.device_put(jnp.arange(32) % 3, split)
    received = moe_dispatch(tokens, expert_index, 1, mesh)
    print(received[..., 0])  # expert e, slot j: the token device j sent it


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
