"""Exercise zero1_specs: the layout of a ZeRO-1 train state.

Check: python -m snippets.exercises.check zero1_specs my_solution.py
"""

from jax.sharding import Mesh


def zero1_specs(shapes: dict, mesh: Mesh) -> dict:
    """Return {"params": ..., "grads": ..., "moments": ...}, three dicts that each
    map every parameter's name (a key of `shapes`, such as "up.kernel") to a
    PartitionSpec, for training with Adam under ZeRO-1 on `mesh`.

    `shapes` maps each parameter's name to its shape. The parameters, and the
    gradients the step computes, stay whole on every device. Adam's two moments
    of a parameter (mu and nu share one spec) are split over mesh axis "data"
    alone, along a dimension whose size "data" divides; a parameter with no such
    dimension keeps its moments whole. Other mesh axes hold copies. Raise
    ValueError if the mesh has no axis "data".
    """
    raise NotImplementedError("zero1_specs: write it")
