"""Reference solution of the exercise `ring_attention` (sequence and context parallelism).

Run `python -m snippets.exercises.ring_attention.solution` to see it.
"""

# --8<-- [start:imports]
import jax
import jax.numpy as jnp
from jax import P
from jax.sharding import Mesh

# --8<-- [end:imports]


# --8<-- [start:solution]
def ring_attention(q: jax.Array, k: jax.Array, v: jax.Array, mesh: Mesh) -> jax.Array:
    """Causal attention of q over k and v, all split over mesh axis 'seq'."""
    if mesh.axis_names != ("seq",):
        raise ValueError(
            f"This needs a 1-D mesh with one axis 'seq', not {dict(mesh.shape)}."
        )
    n = mesh.shape["seq"]  # (1)!
    if q.shape != k.shape or k.shape[0] != v.shape[0] or q.shape[0] % n:
        raise ValueError(
            f"q, k (same shape) and v must have a number of positions that splits "
            f"over {n} devices; got {q.shape}, {k.shape}, {v.shape}."
        )
    send_right = [(i, (i + 1) % n) for i in range(n)]

    def body(q, k, v):
        block, d = q.shape  # (2)!
        me = jax.lax.axis_index("seq")
        queries = me * block + jnp.arange(block)[:, None]
        running_max = jnp.full((block,), -jnp.inf, q.dtype)
        denominator = jnp.zeros((block,), q.dtype)
        numerator = jnp.zeros((block, v.shape[1]), q.dtype)
        for hop in range(n):
            if hop:
                k, v = jax.lax.ppermute((k, v), "seq", send_right)  # (3)!
            keys = (me - hop) % n * block + jnp.arange(block)  # (4)!
            scores = jnp.where(keys <= queries, q @ k.T / jnp.sqrt(d), -jnp.inf)
            new_max = jnp.maximum(running_max, scores.max(axis=1))  # (5)!
            rescale = jnp.exp(running_max - new_max)
            weights = jnp.exp(scores - new_max[:, None])
            denominator = denominator * rescale + weights.sum(axis=1)
            numerator = numerator * rescale[:, None] + weights @ v
            running_max = new_max
        return numerator / denominator[:, None]

    ring = jax.shard_map(body, mesh=mesh, in_specs=P("seq"), out_specs=P("seq"))
    return jax.jit(ring)(q, k, v)  # (6)!


# --8<-- [end:solution]


def main() -> None:
    from jax.sharding import AxisType, NamedSharding

    mesh = jax.make_mesh((8,), ("seq",), axis_types=(AxisType.Explicit,))
    q, k, v = jax.random.normal(jax.random.key(0), (3, 32, 4))
    split = NamedSharding(mesh, P("seq"))
    out = ring_attention(*(jax.device_put(a, split) for a in (q, k, v)), mesh)
    scores = q @ k.T / jnp.sqrt(4.0)
    causal = jnp.where(jnp.tri(32, dtype=bool), scores, -jnp.inf)
    expected = jax.nn.softmax(causal, axis=1) @ v
    print(jax.typeof(out), "largest difference:", jnp.abs(out - expected).max())


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
