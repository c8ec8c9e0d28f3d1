"""Reference solution of the exercise `mesh_shape_for` (choosing a strategy).

Run `python -m snippets.exercises.mesh_shape_for.solution` to see a few answers.
"""


# --8<-- [start:solution]
def mesh_shape_for(
    num_devices: int, state_bytes: int, budget_bytes: int
) -> tuple[int, int]:
    """The (data, model) mesh shape with the smallest "model" axis whose split
    of the model state fits the per-device budget."""
    for model in range(1, num_devices + 1):
        if num_devices % model:  # (1)!
            continue
        if state_bytes / model <= budget_bytes:  # (2)!
            return num_devices // model, model
    raise ValueError(
        f"{state_bytes:,} bytes of model state do not fit {num_devices} "
        f"devices of {budget_bytes:,} bytes even split {num_devices} ways: use "
        f"more devices, or shrink the state (smaller model, optimizer or dtype)."
    )


# --8<-- [end:solution]


def main() -> None:
    gib = 2**30
    for state in (8 * gib, 40 * gib, 100 * gib):
        shape = mesh_shape_for(8, state, 16 * gib)
        print(f"{state // gib} GiB of state on 8 devices of 16 GiB: {shape}")


if __name__ == "__main__":
    main()
