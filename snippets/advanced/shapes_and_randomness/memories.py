"""Memory kinds on the CPU backend: what each device lists, and moving arrays between them.

Run `python -m snippets.advanced.shapes_and_randomness.memories` to print what the page shows.
"""

import jax
import numpy as np
from jax import P
from jax.sharding import Mesh, NamedSharding


def memory_kinds() -> list[str]:
    # --8<-- [start:kinds]
    device = jax.devices()[0]
    kinds = [memory.kind for memory in device.addressable_memories()]
    print(device, "can hold arrays in:", kinds)
    print("default:", device.default_memory().kind)
    print("memory_stats():", device.memory_stats())
    # --8<-- [end:kinds]
    return kinds


def move_between(mesh: Mesh):
    # --8<-- [start:move]
    by_rows = NamedSharding(mesh, P("x"))
    x = jax.device_put(np.arange(16.0), by_rows)
    moved = {}
    for kind in ("pinned_host", "unpinned_host", "device"):
        moved[kind] = jax.device_put(x, by_rows.with_memory_kind(kind))  # (1)!
        print(f"{kind:<14}", jax.typeof(moved[kind]), moved[kind].sharding.memory_kind)
    # --8<-- [end:move]
    return x, moved


def compute_on_host(moved):
    # --8<-- [start:compute-on-host]
    double = jax.jit(lambda a: 2 * a)
    doubled = {kind: double(moved[kind]) for kind in ("pinned_host", "unpinned_host")}
    for kind, result in doubled.items():
        print(
            f"2 * {kind} array: {jax.typeof(result)} in {result.sharding.memory_kind}"
        )
    # --8<-- [end:compute-on-host]
    return doubled


def main() -> None:
    from snippets.advanced.shapes_and_randomness.uneven import build_meshes

    mesh, _ = build_meshes()
    memory_kinds()
    _, moved = move_between(mesh)
    compute_on_host(moved)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
