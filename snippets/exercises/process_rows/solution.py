"""Reference solution of the exercise `process_rows` (beyond one host).

Run `python -m snippets.exercises.process_rows.solution` to see a few answers.
"""

# --8<-- [start:imports]
from collections.abc import Sequence

import jax
from jax.sharding import NamedSharding

# --8<-- [end:imports]


# --8<-- [start:solution]
def process_rows(
    sharding: NamedSharding,
    global_shape: tuple[int, ...],
    process_devices: Sequence[jax.Device],
) -> list[int]:
    """The rows of a global batch that a process must load: every row that one of
    its devices holds, in increasing order, each once."""
    where = sharding.devices_indices_map(tuple(global_shape))  # (1)!
    rows = set()
    for device in process_devices:
        if device not in where:
            raise ValueError(f"{device} is not one of the sharding's devices.")
        rows.update(range(global_shape[0])[where[device][0]])  # (2)!
    return sorted(rows)


# --8<-- [end:solution]


def main() -> None:
    from jax import P
    from jax.sharding import AxisType

    mesh = jax.make_mesh((8,), ("data",), axis_types=(AxisType.Explicit,))
    sharding = NamedSharding(mesh, P("data"))
    print(process_rows(sharding, (16, 4), jax.devices()[:4]))


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
