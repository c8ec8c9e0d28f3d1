"""Three operations that read the sharding in the type on Explicit axes: creating an array,
reshaping it, and with_sharding_constraint, which on Explicit axes only checks.

Run `python -m snippets.concepts.explicit_sharding.typed_operations` to print what the page shows.
"""

import jax
import jax.numpy as jnp
from jax import P

Mesh = jax.sharding.Mesh  # for the type hints; the page's code does not use it


def create(mesh: Mesh) -> tuple[jax.Array, jax.Array]:
    # --8<-- [start:create]
    with jax.set_mesh(mesh):
        grid = jnp.zeros((4, 8), out_sharding=P("x", "y"))  # (1)!
        steps = jnp.arange(8.0, out_sharding=P("y"))
    print("grid: ", jax.typeof(grid))
    print("steps:", jax.typeof(steps))
    # --8<-- [end:create]
    return grid, steps


def reshape(mesh: Mesh, grid: jax.Array) -> dict[tuple, str]:
    # --8<-- [start:reshape]
    shapes = {}
    with jax.set_mesh(mesh):
        for shape in [(32,), (2, 2, 8), (8, 4)]:
            try:
                shapes[shape] = str(jax.typeof(grid.reshape(shape)))
            except Exception as err:  # ShardingTypeError, not exported by jax
                shapes[shape] = f"{type(err).__name__}: {str(err).split('. ')[0]}"
            said = shapes[
                shape
            ]  # an error's line starts with its class, as Python prints it
            print(
                f"{jax.typeof(grid)} -> {shape}:",
                said,
                sep="\n" if "Error" in said else "\n  ",
            )
        chosen = jnp.reshape(grid, (8, 4), out_sharding=P("x", None))  # (1)!
        print(f"{jax.typeof(grid)} -> (8, 4), out_sharding=P('x', None):")
        print(f"  {jax.typeof(chosen)}")
    # --8<-- [end:reshape]
    return shapes


def constraint_checks(mesh: Mesh, grid: jax.Array) -> list[str]:
    # --8<-- [start:constraint]
    @jax.jit(static_argnames="spec")
    def doubled(a, spec):
        return jax.lax.with_sharding_constraint(2 * a, spec)

    said = []
    with jax.set_mesh(mesh):
        for spec in [P("x", "y"), P("x", None)]:
            try:
                said.append(f"{spec}: {jax.typeof(doubled(grid, spec=spec))}")
            except AssertionError as err:
                said.append(f"{spec}: AssertionError: {str(err).split('. ')[0]}")
            print(said[-1].replace(": ", ":\n" if "Error" in said[-1] else ":\n  ", 1))
    # --8<-- [end:constraint]
    return said


def main() -> None:
    from snippets.concepts.explicit_sharding import sharding_in_types

    mesh = sharding_in_types.build_mesh()
    grid, _ = create(mesh)
    reshape(mesh, grid)
    constraint_checks(mesh, grid)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
