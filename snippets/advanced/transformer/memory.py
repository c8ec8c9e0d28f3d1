"""Bytes per device: the state by formula; the compiled step with and without remat.

Run `python -m snippets.advanced.transformer.memory` to print what the page shows.
"""

import dataclasses
import math

import jax
from jax.sharding import Mesh

# The page imports these with model.py's and init.py's imports, and shows them by
# including the sections of model.py, init.py and step.py.
from snippets.advanced.transformer.init import build_mesh, sharded_init
from snippets.advanced.transformer.model import Config, param_count
from snippets.advanced.transformer.step import make_train_step


# --8<-- [start:state-bytes]
def state_bytes(cfg: Config, mesh: Mesh) -> int:
    """Bytes of parameters and AdamW state on one device, as RULES split them."""
    f, t = mesh.shape["fsdp"], mesh.shape["tensor"]
    split_fsdp = (2 * cfg.layers + 1) * cfg.d_model  # (1)!
    split_both = param_count(cfg) - split_fsdp  # (2)!
    params = 4 * (split_both // (f * t) + split_fsdp // f)
    return 3 * params + 4 + 4  # (3)!


# --8<-- [end:state-bytes]


def memory_table(cfg: Config, mesh: Mesh, compiled, tokens_spec):
    # --8<-- [start:memory-table]
    without = sharded_init(dataclasses.replace(cfg, remat=False), mesh)
    lowered = make_train_step(without, mesh).lower(without.abstract, tokens_spec)
    tokens = 4 * math.prod(tokens_spec.sharding.shard_shape(tokens_spec.shape))
    print(f"Bytes per device, {jax.default_backend()} backend")
    print(f"state by formula {state_bytes(cfg, mesh):,}")
    print("remat   arguments    - tokens     aliased temporaries")
    table = {}
    for remat, program in {"on": compiled, "off": lowered.compile()}.items():
        m = program.memory_analysis()  # (1)!
        a = m.argument_size_in_bytes
        table[remat] = (a, a - tokens, m.alias_size_in_bytes, m.temp_size_in_bytes)
        print(f"{remat:<5}" + "".join(f"{n:>12,}" for n in table[remat]))
    # --8<-- [end:memory-table]
    return table, lowered


# --8<-- [start:fits]
# An H100 SXM's memory, from its spec, and the part JAX's allocator takes by default.
H100_BYTES = 84_978_434_048
DEFAULT_FRACTION = 0.75


def fits(compiled, budget_bytes: int) -> tuple[int, bool]:
    """Bytes one device needs to run `compiled`, and whether they fit in `budget_bytes`."""
    m = compiled.memory_analysis()
    needed = (
        m.argument_size_in_bytes
        + m.output_size_in_bytes
        - m.alias_size_in_bytes  # (1)!
        + m.temp_size_in_bytes
    )
    return needed, needed <= budget_bytes


# --8<-- [end:fits]


def fits_here(compiled, lowered):
    # --8<-- [start:fits-here]
    budget = int(H100_BYTES * DEFAULT_FRACTION)  # what JAX takes of an H100
    for remat, program in {"on": compiled, "off": lowered.compile()}.items():
        needed, ok = fits(program, budget)
        print(f"remat {remat}: needs {needed:,} bytes, fits in {budget:,}: {ok}")
    # --8<-- [end:fits-here]


def main() -> None:
    from snippets.advanced.transformer import init, step

    mesh = build_mesh()
    cfg, sharded, _ = init.make_state(mesh)
    _, tokens_spec, compiled = step.compile_step(cfg, sharded, mesh)
    _, lowered = memory_table(cfg, mesh, compiled, tokens_spec)
    fits_here(compiled, lowered)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
