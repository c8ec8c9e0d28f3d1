"""in_specs cut the inputs into blocks; out_specs glue the blocks the body returns.

Run `python -m snippets.concepts.shard_map.specs` to print what the page shows.
"""

import jax
import jax.numpy as jnp
from jax import P
from jax.sharding import Mesh


def reassemble(mesh: Mesh, x: jax.Array) -> dict:
    # --8<-- [start:out-specs]
    def as_row(block):
        return block.reshape(1, 2)  # every device returns a (1, 2) block

    glued = {}
    for out_spec in (P("x"), P(None, "x")):
        f = jax.shard_map(as_row, mesh=mesh, in_specs=P("x"), out_specs=out_spec)
        glued[out_spec] = f(x)
        print(f"out_specs={out_spec}: {jax.typeof(glued[out_spec])}")
        print(glued[out_spec])
    # --8<-- [end:out-specs]
    return glued


def replicated_input(mesh: Mesh, x: jax.Array) -> tuple[jax.Array, jax.Array]:
    # --8<-- [start:replicated]
    w = jnp.array([1.0, 10.0])

    def weigh(block, w):
        print("block:", jax.typeof(block), " w:", jax.typeof(w))  # (1)!
        return block * w, w.sum()

    weigh_all = jax.shard_map(
        weigh,
        mesh=mesh,
        in_specs=(P("x"), P()),
        out_specs=(P("x"), P()),  # (2)!
    )
    weighted, w_sum = weigh_all(x, w)
    print(jax.typeof(weighted))
    print(weighted)
    print(jax.typeof(w_sum), w_sum)
    # --8<-- [end:replicated]
    return weighted, w_sum


def main() -> None:
    from snippets.concepts.shard_map import local_view

    mesh, x = local_view.build_data()
    reassemble(mesh, x)
    replicated_input(mesh, x)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
