"""Exercise checkpoint_restore: restore a saved train state onto a given mesh and specs.

Check: python -m snippets.exercises.check checkpoint_restore my_solution.py
"""

from pathlib import Path

from jax import P
from jax.sharding import Mesh
from orbax.checkpoint import v1 as ocp  # noqa: F401  (you will need it)


def checkpoint_restore(path: Path, mesh: Mesh, specs: dict[str, P]):
    """Restore the checkpoint at `path` onto `mesh` and return what ocp.load returns.

    The checkpoint holds {"model": nnx.state(model), "optimizer":
    nnx.state(optimizer)} of an MLP (snippets/models.py, of any size) and its
    Adam optimizer, saved from another mesh. Every restored array must be on
    `mesh`: a parameter laid out as specs["up.kernel"] (and so on) says, Adam's
    two moments of it the same, everything else (the step counts) replicated,
    P(). Read each array straight onto that layout.
    """
    raise NotImplementedError("checkpoint_restore: write it")
