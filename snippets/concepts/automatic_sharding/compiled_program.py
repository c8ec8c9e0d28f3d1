"""What the compiler chose: a compiled program's shardings, and a look at its HLO text.

Run `python -m snippets.concepts.automatic_sharding.compiled_program` to print what the page shows.
"""

# --8<-- [start:imports]
import jax
from jax import P
from jax.sharding import NamedSharding

# --8<-- [end:imports]

Mesh = jax.sharding.Mesh  # for the type hints; the page's code does not use it


def chosen_shardings(x: jax.Array) -> jax.stages.Compiled:
    # --8<-- [start:chosen-shardings]
    compiled = jax.jit(lambda a: a.sum(axis=0)).lower(x).compile()
    (in_sharding,), _ = compiled.input_shardings  # (1)!
    print("input: ", in_sharding.spec)
    print("output:", compiled.output_shardings.spec)
    # --8<-- [end:chosen-shardings]
    return compiled


def hlo_lines(x: jax.Array, mesh: Mesh) -> list[str]:
    # --8<-- [start:hlo-lines]
    everywhere = NamedSharding(mesh, P())
    gather = jax.jit(lambda a: 2 * a, out_shardings=everywhere)
    compiled = gather.lower(x).compile()
    gathers = []
    for line in compiled.as_text().splitlines():  # (1)!
        if " all-gather(" in line:
            result = line.split(" all-gather(")[0].strip()  # (2)!
            groups = line.split("replica_groups=")[1].split(", ")[0]  # (3)!
            gathers.append(f"{result:<34} over {groups}")
    print("\n".join(gathers))
    # --8<-- [end:hlo-lines]
    return gathers


def main() -> None:
    from snippets.concepts.automatic_sharding import propagation

    mesh = propagation.build_mesh()
    x = propagation.place_input(mesh)
    chosen_shardings(x)
    hlo_lines(x, mesh)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
