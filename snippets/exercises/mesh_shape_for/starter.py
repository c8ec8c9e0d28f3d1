"""Exercise mesh_shape_for: a (data, model) mesh shape for a memory budget.

Check: python -m snippets.exercises.check mesh_shape_for my_solution.py
"""


def mesh_shape_for(
    num_devices: int, state_bytes: int, budget_bytes: int
) -> tuple[int, int]:
    """Return (data, model), with data * model == num_devices.

    The model state (parameters, gradients, optimizer state: state_bytes in
    all) is split evenly over the "model" axis and copied along "data", so each
    device holds state_bytes / model bytes of it, and must hold no more than
    budget_bytes. Splitting costs communication in every step, so choose the
    smallest model axis that fits. If even model == num_devices does not fit,
    raise ValueError.
    """
    raise NotImplementedError("mesh_shape_for: write it")
