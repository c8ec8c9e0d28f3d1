"""Each exercise's grader as one file that runs without a clone of this repository.

`source(name)` writes `snippets/exercises/<name>/grader.py` together with every module of this
repository it uses (the command line `check.py`, the grading helpers, the models, ...) into one
Python file: the modules' own text, under a private package name, found by a small importer
after them. Nothing is copied by hand, so the file grades as
`python -m snippets.exercises.check <name>` does (tests/docs_build/test_graders.py). Besides
the standard library it imports jax, numpy, flax and optax only (and orbax-checkpoint for the
one exercise about checkpoints), as `third_party(name)` says.

The build publishes the files at `exercises/graders/<name>.py` (`publish`). An exercise's
notebook fetches its own from the site where its page says how to check an answer
(`notebook_cells`, placed by docs_build/notebooks.py), and each exercise page says how to use
it, in one admonition written here (`fill`).
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDER = "exercises/graders"  # where the site publishes them
OURS = ("snippets", "docs_build")  # this repository's packages
# Imported only by check.main, the clone's command line over every exercise, which a one-file
# grader does not call: it finds every grader in the repository.
LEFT_OUT = {"snippets.exercises.registry"}
# What a reader's Python must have besides the standard library.
PACKAGES = {"jax", "numpy", "flax", "optax", "orbax"}
# Where an exercise page wants its "Check your answer" admonition.
MARKER = "<!-- exercise: check -->"
# The notebook cells' override of the site's address: a local copy of the site, for tests.
SITE_VARIABLE = "SHARDING_DOCS_SITE"


class GraderError(RuntimeError):
    """A grader's modules cannot be bundled (an import form the bundle cannot rename)."""


def _module_file(module: str) -> Path | None:
    path = ROOT.joinpath(*module.split("."))
    if path.with_suffix(".py").is_file():
        return path.with_suffix(".py")
    return None  # a package: its __init__ is left out (below)


@functools.cache
def _imports(text: str) -> tuple[ast.Import | ast.ImportFrom, ...]:
    """Every import statement of a module's text (cached: the graders share most modules)."""
    return tuple(
        n
        for n in ast.walk(ast.parse(text))
        if isinstance(n, ast.Import | ast.ImportFrom)
    )


def modules(name: str) -> dict[str, str]:
    """Module name -> source, for the grader of `name` and every module of ours it imports,
    at module level or inside a function."""
    todo = [
        "snippets.exercises.check",
        f"snippets.exercises.{name}.grader",
        "docs_build.devices",
    ]
    found: dict[str, str] = {}
    while todo:
        module = todo.pop()
        if module in found or module in LEFT_OUT:
            continue
        path = _module_file(module)
        if path is None:
            raise GraderError(f"{module}: not a module file of this repository")
        text = path.read_text(encoding="utf-8")
        found[module] = text
        for node in _imports(text):
            if isinstance(node, ast.Import):
                if any(a.name.split(".")[0] in OURS for a in node.names):
                    # `import snippets.x` binds `snippets`, which the bundle renames.
                    raise GraderError(
                        f"{module}: write `from ... import`, not `import`"
                    )
                continue
            if node.level or not node.module or node.module.split(".")[0] not in OURS:
                continue
            if _module_file(node.module) is not None:
                todo.append(node.module)
            else:  # from a package: its submodules, if that is what is imported
                todo += [
                    f"{node.module}.{a.name}"
                    for a in node.names
                    if _module_file(f"{node.module}.{a.name}") is not None
                ]
    return dict(sorted(found.items()))


_OUR_IMPORT = re.compile(rf"^(\s*from\s+)({'|'.join(OURS)})(?=[.\s])", re.M)


def renamed(text: str, package: str) -> str:
    """A module's text, its imports of our packages moved under `package`."""
    return _OUR_IMPORT.sub(rf"\1{package}.\2", text)


def third_party(name: str) -> set[str]:
    """The top-level packages outside the standard library that the grader of `name` imports."""
    found = set()
    for text in modules(name).values():
        for node in _imports(text):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] if not node.level else []
            else:
                names = [a.name for a in node.names]
            for full in names:
                top = full.split(".")[0]
                if top not in OURS and top not in sys.stdlib_module_names:
                    found.add(top)
    return found


def _literal(text: str) -> str:
    """A Python string literal of `text`, as readable as possible: a raw triple-quoted one
    when that holds it exactly."""
    if "'''" not in text and not text.endswith("\\") and "\r" not in text:
        literal = "r'''" + text + "'''"
        if ast.literal_eval(literal) == text:
            return literal
    return repr(text)


_HEAD = '''\
"""The grader of the exercise {name} of "Sharding in JAX, run and tested", in one file.

    {page}

In a notebook, after the cell that defines your function:

    import {name}_grader                 # this file, saved as {name}_grader.py
    {name}_grader.check({name})

In a terminal, on a file that defines it:

    python {name}.py my_solution.py

It loads the function on 8 virtual CPU devices, runs it on hidden cases and says what is
wrong, as `python -m snippets.exercises.check {name}` does in a clone of the site's
repository, from whose code this file was generated: the modules below are that code,
unchanged but for their imports, which go through a private package name. It needs jax,
numpy, flax and optax{extra} (tested with {versions}).
"""

import importlib
import importlib.abc
import importlib.util
import linecache
import sys

_PACKAGE = "_sharding_grader_{name}"
_SOURCES = {{
'''

_TAIL = '''\
}}


class _Bundle(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the modules above under _PACKAGE; the packages between them are empty."""

    package = _PACKAGE

    def find_spec(self, fullname, path=None, target=None):
        if fullname != _PACKAGE and not fullname.startswith(_PACKAGE + "."):
            return None
        inner = fullname[len(_PACKAGE) + 1 :]
        if inner in _SOURCES:
            return importlib.util.spec_from_loader(fullname, self)
        if not inner or any(m.startswith(inner + ".") for m in _SOURCES):
            return importlib.util.spec_from_loader(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        inner = module.__name__[len(_PACKAGE) + 1 :]
        if inner in _SOURCES:
            text = _SOURCES[inner]
            where = f"{{globals().get('__file__', _PACKAGE)}}: {{inner}}"
            linecache.cache[where] = (len(text), None, text.splitlines(True), where)
            module.__file__ = where
            exec(compile(text, where, "exec"), module.__dict__)


if not any(getattr(f, "package", None) == _PACKAGE for f in sys.meta_path):
    sys.meta_path.insert(0, _Bundle())
_check = importlib.import_module(_PACKAGE + ".snippets.exercises.check")
EXERCISE = importlib.import_module(_PACKAGE + ".snippets.exercises.{name}.grader").EXERCISE
USAGE = "usage: python {name}.py <file.py>"


def check({name}):
    """Grade your function {name}: each hidden case, then its program; print what is wrong."""
    _check.grade_function(EXERCISE, {name})


def main(argv=None):
    """Grade the file named on the command line: exit status 0 right, 1 wrong, 2 unusable."""
    args = sys.argv[1:] if argv is None else list(argv)
    if len(args) != 1 or args[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if args and args[0] in ("-h", "--help") else 2
    return _check.grade_file(EXERCISE, args[0], USAGE)


if __name__ == "__main__":
    sys.exit(main())
'''


def source(
    name: str, site_url: str = "", versions: dict[str, str] | None = None
) -> str:
    """The one-file grader of exercise `name`, as Python text."""
    package = f"_sharding_grader_{name}"
    extra = " and orbax-checkpoint" if "orbax" in third_party(name) else ""
    versions = versions or {}
    shown = ", ".join(f"{k} {v}" for k, v in versions.items()) or "the site's pins"
    page = f"{site_url.rstrip('/')}/exercises/{name}/" if site_url else ""
    parts = [
        _HEAD.format(name=name, page=page, extra=extra, versions=shown).replace(
            "\n    \n", "\n"
        )
    ]
    for module, text in modules(name).items():
        parts.append(f"    {module!r}: {_literal(renamed(text, package))},\n")
    parts.append(_TAIL.format(name=name))
    return "".join(parts)


def url(site_url: str, name: str) -> str:
    return f"{site_url.rstrip('/')}/{FOLDER}/{name}.py"


# ----------------------------------------------------------------------------------------
# What the exercise pages and notebooks say.


def admonition(name: str, repo_url: str) -> str:
    """The page's "how to check" box: in a clone, and anywhere else with the one file."""
    pins = [f"`{k}=={v}`" for k, v in versions().items()]
    if "orbax" not in third_party(name):
        pins = [p for p in pins if "orbax" not in p]
    pinned = ", ".join(pins[:-1]) + f" and {pins[-1]}"
    return f"""\
!!! tip "Two ways to run the grader"

    **In a clone** of [the site's repository]({repo_url}), with Python 3.12 or newer, from
    its root:

    ```{{.bash}}
    nox -s check -- {name} my_solution.py
    python -m snippets.exercises.check {name} my_solution.py
    ```

    **Anywhere else**, in Colab or in a fresh Python 3.12 or newer with {pinned}: the
    grader is also one file, [`{name}.py`](graders/{name}.py). This page's notebook fetches
    it and grades the function you write there; in a terminal, save it beside your file and
    run `python {name}.py my_solution.py`.
"""


def notebook_note(name: str) -> str:
    """What the notebook says in place of the page's admonition, above its two cells."""
    return f"""\
Write the body of `{name}` in the starter's cell above and run it, then run the next two
cells: the first fetches this exercise's grader, one file from the site; the second grades
your `{name}`. In a clone of the site's repository,
`python -m snippets.exercises.check {name} my_solution.py` runs the same grader on a file.
"""


def notebook_cells(name: str, site_url: str) -> tuple[str, str]:
    """The notebook's two cells: fetch the grader from the site, then grade."""
    fetch = f"""\
# The grader: one file from the site ({SITE_VARIABLE} names another copy of the site).
import importlib
import os
import urllib.request

site = os.environ.get("{SITE_VARIABLE}", "{site_url.rstrip("/")}/")
urllib.request.urlretrieve(f"{{site.rstrip('/')}}/{FOLDER}/{name}.py", "{name}_grader.py")
importlib.invalidate_caches()  # the file is new: let import find it
import {name}_grader"""
    grade = f"{name}_grader.check({name})"
    return fetch, grade


def exercise_of(page: str) -> str | None:
    """The exercise a page (relative to docs/) states, if it is an exercise page."""
    m = re.fullmatch(r"exercises/(\w+)\.md", page)
    if m and (ROOT / "snippets" / "exercises" / m[1] / "grader.py").is_file():
        return m[1]
    return None


def fill(markdown: str, page: str, repo_url: str) -> str:
    """An exercise page's marker, replaced by its admonition."""
    name = exercise_of(page)
    if MARKER not in markdown:
        return markdown
    if name is None:
        raise GraderError(f"{page}: {MARKER} is for exercise pages only")
    return markdown.replace(MARKER, admonition(name, repo_url).rstrip("\n"))


def versions() -> dict[str, str]:
    """The pinned versions a grader file names (those its modules import)."""
    from docs_build import outputs

    shown = ("jax", "flax", "optax", "orbax-checkpoint")
    return {k: v for k, v in outputs.versions().items() if k in shown}


def publish(config, files) -> None:
    """Add every exercise's one-file grader to the site's files (exercises/graders/)."""
    from mkdocs.structure.files import File

    for folder in sorted((ROOT / "snippets" / "exercises").glob("*/grader.py")):
        name = folder.parent.name
        text = source(name, config.site_url or "", versions())
        files.append(
            File.generated(config, f"{FOLDER}/{name}.py", content=text.encode())
        )
