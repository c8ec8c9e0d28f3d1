"""Every exercise, found in its folder and listed in the site's reading order.

An exercise is a folder `snippets/exercises/<name>/`: `starter.py` (what the learner copies),
`grader.py` (its hidden cases and checks, as `EXERCISE`), `solution.py` (the reference
solution, unless a guide page's own code is the solution) and `wrong_answers.toml` (answers
the grader must refuse, with what it must say). Its statement is `docs/exercises/<name>.md`.
The order is the one place the site writes it: the navigation of mkdocs.yml.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from snippets.exercises.grading import Exercise

HERE = Path(__file__).resolve().parent
MKDOCS = HERE.parents[1] / "mkdocs.yml"


def names() -> list[str]:
    """The exercises' names, in the order of the site's navigation."""
    folders = {p.parent.name for p in HERE.glob("*/grader.py")}
    listed = re.findall(r"^\s*- exercises/(\w+)\.md\s*$", MKDOCS.read_text(), re.M)
    missing = sorted(folders - set(listed))
    if missing:
        raise RuntimeError(
            f"exercises without a page in mkdocs.yml's nav: {', '.join(missing)}"
        )
    return [name for name in listed if name in folders]


def _load() -> dict[str, Exercise]:
    found = {}
    for name in names():
        exercise = importlib.import_module(f"snippets.exercises.{name}.grader").EXERCISE
        if exercise.name != name:
            raise RuntimeError(
                f"snippets/exercises/{name}/grader.py grades {exercise.name}"
            )
        found[name] = exercise
    return found


EXERCISES: dict[str, Exercise] = _load()
EXERCISE_LIST: list[Exercise] = list(EXERCISES.values())
