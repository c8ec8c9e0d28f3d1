"""Megatron-style sequence parallelism: an MLP block between tensor-parallel regions.

Run `python -m snippets.advanced.sequence_parallel.mlp` to print what the page shows.
"""

import jax
import jax.numpy as jnp
from jax import P
from jax.sharding import AxisType, Mesh, NamedSharding

# On the page, these are defined by earlier blocks.
from snippets.hlo import count_collectives


# --8<-- [start:block]
def layer_norm(x):
    """Each token (row) to mean 0 and variance 1: a token needs only its own row."""
    mean = x.mean(axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(x.var(axis=-1, keepdims=True) + 1e-6)


def mlp_block(x, w1, w2):
    """The block on one device: x + relu(layer_norm(x) @ w1) @ w2, x is (tokens, d)."""
    return x + jax.nn.relu(layer_norm(x) @ w1) @ w2


# --8<-- [end:block]


# --8<-- [start:tensor-parallel]
def check_sizes(x, w1, w2, mesh):
    """The split dimensions must divide over the mesh's 'model' axis."""
    n = mesh.shape.get("model", 0)
    if n == 0:
        raise ValueError(
            f"This needs a mesh axis 'model'; the mesh has {dict(mesh.shape)}."
        )
    tokens, hidden = x.shape[0], w1.shape[1]
    if tokens % n or hidden % n:
        raise ValueError(
            f"{tokens} tokens and a hidden size of {hidden} must both split over the "
            f"{n} devices of 'model': make them multiples of {n}."
        )


def tp_block(x, w1, w2, mesh):
    """Tensor parallel: w1 split by columns, w2 by rows, x whole on every device."""
    check_sizes(x, w1, w2, mesh)

    def body(x, w1, w2):  # x (tokens, d), w1 (d, hidden/n), w2 (hidden/n, d)
        h = jax.nn.relu(layer_norm(x) @ w1)  # every device normalises every token
        return x + jax.lax.psum(h @ w2, "model")  # (1)!

    specs = (P(), P(None, "model"), P("model", None))
    block = jax.shard_map(body, mesh=mesh, in_specs=specs, out_specs=P())
    return jax.jit(block)(x, w1, w2)


# --8<-- [end:tensor-parallel]


# --8<-- [start:sequence-parallel]
def sp_block(x, w1, w2, mesh):
    """The same block, with x split over the tokens between the matmuls."""
    check_sizes(x, w1, w2, mesh)

    def body(x, w1, w2):  # x (tokens/n, d): this device's tokens only
        normed = layer_norm(x)  # (1)!
        every_token = jax.lax.all_gather(normed, "model", axis=0, tiled=True)  # (2)!
        h = jax.nn.relu(every_token @ w1)
        mine = jax.lax.psum_scatter(h @ w2, "model", scatter_dimension=0, tiled=True)
        return x + mine  # (3)!

    specs = (P("model", None), P(None, "model"), P("model", None))
    block = jax.shard_map(body, mesh=mesh, in_specs=specs, out_specs=P("model", None))
    return jax.jit(block)(x, w1, w2)


# --8<-- [end:sequence-parallel]


def run_both():
    # --8<-- [start:run-both]
    mesh = jax.make_mesh((8,), ("model",), axis_types=(AxisType.Explicit,))
    x, w1_t, w2 = jax.random.normal(jax.random.key(1), (3, 64, 16))
    w1, w2 = w1_t.T / 4, w2 / 8  # 64 tokens of d = 16, a hidden size of 64

    def put(a, *spec):
        return jax.device_put(a, NamedSharding(mesh, P(*spec)))

    x_whole, x_split = put(x), put(x, "model", None)
    w1_cols, w2_rows = put(w1, None, "model"), put(w2, "model", None)
    tp_out = tp_block(x_whole, w1_cols, w2_rows, mesh)
    sp_out = sp_block(x_split, w1_cols, w2_rows, mesh)

    expected = mlp_block(x, w1, w2)
    print(f"{'':<18} {'result':<21} {'device 0':<9} {'bytes':>5}  within {1e-5:g}")
    for name, out in (("tensor parallel", tp_out), ("sequence parallel", sp_out)):
        shard = out.addressable_shards[0].data
        gap = jnp.abs(out - expected).max()
        print(
            f"{name:<18} {jax.typeof(out)!s:<21} {shard.shape!s:<9} "
            f"{shard.nbytes:>5}  {gap <= 1e-5}"
        )
    # --8<-- [end:run-both]
    return mesh, (x, w1, w2), (x_whole, x_split, w1_cols, w2_rows), (tp_out, sp_out)


def compare_programs(mesh: Mesh, placed) -> dict[str, dict[str, int]]:
    x_whole, x_split, w1_cols, w2_rows = placed
    # --8<-- [start:compare]
    programs = {
        "tensor parallel": jax.jit(tp_block, static_argnums=3)
        .lower(x_whole, w1_cols, w2_rows, mesh)
        .compile(),
        "sequence parallel": jax.jit(sp_block, static_argnums=3)
        .lower(x_split, w1_cols, w2_rows, mesh)
        .compile(),
    }
    counts = {name: count_collectives(p) for name, p in programs.items()}
    kinds = sorted({kind for c in counts.values() for kind in c})
    print(f"{'':<16}" + "".join(f"{name:>19}" for name in counts))
    for kind in kinds:
        print(f"{kind:<16}" + "".join(f"{c.get(kind, 0):>19}" for c in counts.values()))
    # --8<-- [end:compare]
    return counts


def main() -> None:
    mesh, _, placed, _ = run_both()
    compare_programs(mesh, placed)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
