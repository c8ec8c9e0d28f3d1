"""Exercises: reference solutions, starter files and the grader (docs/exercises/).

Every reference solution is importable from here, e.g.
`from snippets.exercises import ring_all_gather`. Grade a file with
`python -m snippets.exercises.check <exercise> <file.py>`.

The solutions are imported when first asked for, so that the grader, and
`python -m snippets.exercises.solutions.<name>`, do not import them all.
"""

import importlib

# Where each reference solution lives: three belong to the page they come from.
_MODULES = {
    "column_sums": "snippets.exercises.solutions.column_sums",
    "fsdp_shard": "snippets.exercises.solutions.fsdp_shard",
    "gpipe_schedule": "snippets.exercises.solutions.gpipe_schedule",
    "manual_dense": "snippets.exercises.solutions.manual_dense",
    "matmul_rows": "snippets.exercises.solutions.matmul_rows",
    "mesh_shape_for": "snippets.exercises.solutions.mesh_shape_for",
    "per_device_bytes": "snippets.exercises.solutions.per_device_bytes",
    "place_batch": "snippets.exercises.solutions.place_batch",
    "process_rows": "snippets.exercises.solutions.process_rows",
    "ring_all_gather": "snippets.exercises.solutions.ring_all_gather",
    "shard_map_double": "snippets.concepts.shard_map.basics",
    "shard_map_simulate": "snippets.training.simulated_data_parallel.simulate",
    "shard_map_vs_vmap": "snippets.concepts.shard_map_vs_vmap.compare",
    "sharded_linear": "snippets.exercises.solutions.sharded_linear",
    "tp_specs": "snippets.exercises.solutions.tp_specs",
}

__all__ = sorted(_MODULES)


def __getattr__(name: str):
    if name in _MODULES:
        return getattr(importlib.import_module(_MODULES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
