"""shard_map over one mesh axis of two: "data" by hand, "model" left to the compiler.

Run `python -m snippets.advanced.manual_control.partial_manual` to print what the page shows.
"""

# --8<-- [start:imports]
import re

import jax
import jax.numpy as jnp
import numpy as np
from jax import P
from jax.sharding import AxisType, Mesh, NamedSharding

# --8<-- [end:imports]
# isort: split
from collections.abc import Callable


def build_data() -> tuple[Mesh, jax.Array, jax.Array]:
    # --8<-- [start:mesh-and-data]
    mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
    rng = np.random.default_rng(0)
    x = jax.device_put(
        rng.standard_normal((16, 8), np.float32), NamedSharding(mesh, P("data", None))
    )
    w = jax.device_put(
        rng.standard_normal((8, 32), np.float32), NamedSharding(mesh, P(None, "model"))
    )
    print("x:", x.sharding.spec, " w:", w.sharding.spec)
    # --8<-- [end:mesh-and-data]
    return mesh, x, w


# --8<-- [start:loss-and-grad]
def loss_and_grad(x_block, w):
    """sum((x @ w)**2) and its gradient in w, for this device's rows of x."""
    here = jax.sharding.get_abstract_mesh()  # (1)!
    kinds = {
        name: kind.name
        for name, kind in zip(here.axis_names, here.axis_types, strict=True)
    }
    print("axes in the body:", kinds)
    print("x_block:", jax.typeof(x_block), " w:", jax.typeof(w))
    h = x_block @ w
    loss = jax.lax.psum(jnp.sum(h**2), "data")  # (2)!
    grad = jax.lax.psum(2 * x_block.T @ h, "data")
    return loss, grad


# --8<-- [end:loss-and-grad]


def run_partial(
    mesh: Mesh, x: jax.Array, w: jax.Array
) -> tuple[Callable, jax.Array, jax.Array]:
    # --8<-- [start:run-partial]
    step = jax.jit(
        jax.shard_map(
            loss_and_grad,
            mesh=mesh,
            in_specs=(P("data"), P()),  # (1)!
            out_specs=(P(), P()),
            axis_names={"data"},  # (2)!
        )
    )
    loss, grad = step(x, w)
    print("grad:", jax.typeof(grad), grad.sharding.spec)
    print("each device holds", grad.addressable_shards[0].data.shape)

    h = np.asarray(x) @ np.asarray(w)  # the same sums, on one device
    print("loss as unsharded:", np.allclose(loss, np.sum(h**2), rtol=1e-5))
    print("grad as unsharded:", np.allclose(grad, 2 * np.asarray(x).T @ h, rtol=1e-5))
    # --8<-- [end:run-partial]
    return step, loss, grad


# --8<-- [start:collective-axes]
GROUPS = r"replica_groups=(mesh\[.*?\] \{.*?\}|\[[\d,]+\]<=\[[\d,]+\](?:T\([\d,]+\))?|\{[\d{},]*\})"


def numbers(text: str) -> list[int]:
    return [int(n) for n in text.split(",")]


def group_axes(groups: str, mesh: Mesh) -> tuple[str, ...]:
    """The mesh axes along which the devices of one replica group differ."""
    if groups.startswith("mesh["):  # mesh['data'=2,'model'=4] {'data'}
        sizes = dict(re.findall(r"'(\w+)'=(\d+)", groups.split("] ", 1)[0]))
        if {k: int(v) for k, v in sizes.items()} != dict(mesh.shape):
            raise ValueError(
                f"{groups} was compiled for another mesh than {mesh.shape}."
            )
        return tuple(re.findall(r"'(\w+)'", groups.split("] ", 1)[1]))
    if "<=" in groups:  # (1)!
        shape, dims, perm = re.fullmatch(
            r"\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", groups
        ).groups()
        if np.prod(numbers(dims)) != mesh.size:
            raise ValueError(
                f"{groups} was compiled for another mesh than {mesh.shape}."
            )
        ids = np.arange(mesh.size).reshape(numbers(dims))
        ids = ids.transpose(numbers(perm)) if perm else ids
        first = ids.reshape(numbers(shape))[0]
    else:  # {{0,4},{1,5},...}
        first = np.array(numbers(re.match(r"\{\{([\d,]+)\}", groups).group(1)))
    if first.max() >= mesh.size:
        raise ValueError(
            f"{groups} names devices that a {mesh.size}-device mesh lacks."
        )
    where = np.unravel_index(first, mesh.devices.shape)  # (2)!
    return tuple(
        a for a, pos in zip(mesh.axis_names, where, strict=True) if len(set(pos)) > 1
    )


def collective_axes(compiled, mesh: Mesh) -> list[tuple[str, str, tuple, str]]:
    """Each grouped collective: (operation, result, mesh axes, who asked for it)."""
    found = []
    for line in compiled.as_text().splitlines():
        op = re.search(
            r"= (.+?) (all-reduce|all-gather|reduce-scatter|all-to-all)\(", line
        )
        groups = re.search(GROUPS, line)
        if op and groups:
            result = re.sub(r"\{[\d,]*\}", "", op.group(1))  # drop the layouts
            who = "partitioner" if 'is_spmd_generated="true"' in line else "your code"
            found.append((op.group(2), result, group_axes(groups.group(1), mesh), who))
    return found


# --8<-- [end:collective-axes]


def compiled_axes(step: Callable, mesh: Mesh, x: jax.Array, w: jax.Array) -> list:
    # --8<-- [start:compiled-axes]
    compiled = step.lower(x, w).compile()
    for op, result, axes, who in collective_axes(compiled, mesh):
        print(f"{op:<11}{result:<22} over {axes!s:<12} from {who}")
    # --8<-- [end:compiled-axes]
    return collective_axes(compiled, mesh)


def explicit_model(x: jax.Array, w: jax.Array) -> tuple[Mesh, jax.Array, jax.Array]:
    # --8<-- [start:explicit-model]
    explicit = jax.make_mesh(
        (2, 4), ("data", "model"), axis_types=(AxisType.Explicit,) * 2
    )
    x_e = jax.device_put(x, NamedSharding(explicit, P("data", None)))
    w_e = jax.device_put(w, NamedSharding(explicit, P(None, "model")))
    loss_e, grad_e = jax.shard_map(
        loss_and_grad,
        mesh=explicit,
        in_specs=(P("data"), P()),
        out_specs=(P(), P()),
        axis_names={"data"},
    )(x_e, w_e)
    print("grad:", jax.typeof(grad_e))
    # --8<-- [end:explicit-model]
    return explicit, loss_e, grad_e


def main() -> None:
    mesh, x, w = build_data()
    step, _, _ = run_partial(mesh, x, w)
    compiled_axes(step, mesh, x, w)
    explicit_model(x, w)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
