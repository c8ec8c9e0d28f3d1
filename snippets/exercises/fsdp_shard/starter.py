"""Exercise fsdp_shard: split every parameter of a model over "data".

Check: python -m snippets.exercises.check fsdp_shard my_solution.py
"""

from flax import nnx
from jax.sharding import Mesh


def fsdp_shard(model: nnx.Module, mesh: Mesh) -> nnx.Module:
    """Move every nnx.Param of `model` onto `mesh`, split over mesh axis "data"
    along its largest dimension that is a multiple of the size n of "data".

    Only "data" splits parameters (FSDP); along other mesh axes they are copied.
    A parameter with no such dimension stays whole (none in the hidden cases).
    Change the model in place and return it. Afterwards each device holds 1/n
    of the parameters' bytes.
    """
    raise NotImplementedError("fsdp_shard: write it")
