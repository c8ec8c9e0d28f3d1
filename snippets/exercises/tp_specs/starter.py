"""Exercise tp_specs: the specs of a tensor-parallel MLP.

Check: python -m snippets.exercises.check tp_specs my_solution.py
"""

from jax import P


def tp_specs(axis: str) -> dict[str, P]:
    """Return a PartitionSpec for each parameter of the MLP of snippets/models.py.

    The keys are "up.kernel" (32, 128), "up.bias" (128,), "down.kernel"
    (128, 8) and "down.bias" (8,). `axis` names the mesh axis to split over.
    Both kernels must be split over `axis`, and the forward pass, with its input
    and output whole on every device, must need exactly one all-reduce.
    """
    raise NotImplementedError("tp_specs: write it")
