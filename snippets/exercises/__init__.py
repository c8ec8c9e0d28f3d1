"""Exercises: one folder each (see `registry`), and the grader (`check`).

Grade a file with `python -m snippets.exercises.check <exercise> <file.py>`. The reference
solution of an exercise is `solution(name)`, imported when asked for, so that the grader does
not import them all.
"""

import importlib
from collections.abc import Callable

# Three solutions are a guide page's own code; the others are in the exercise's folder.
_ON_PAGES = {
    "shard_map_double": "snippets.concepts.shard_map.basics",
    "shard_map_simulate": "snippets.training.simulated_data_parallel.simulate",
    "shard_map_vs_vmap": "snippets.concepts.shard_map_vs_vmap.compare",
}


def solution(name: str) -> Callable:
    """The reference solution of exercise `name`: a function of that name."""
    module = _ON_PAGES.get(name, f"snippets.exercises.{name}.solution")
    return getattr(importlib.import_module(module), name)
