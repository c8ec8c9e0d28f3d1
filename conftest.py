"""Shared by tests/ and by the Python fences of docs/ (pytest-markdown-docs).

It must sit at the repository root: this is what gives `pytest docs/` the same 8 virtual CPU
devices and the same `snippets` imports as the tests.
"""

import os

import pytest

from docs_build.devices import use_compilation_cache, use_cpu_devices

os.environ.setdefault("MPLBACKEND", "Agg")  # pages call plt.show(); no window in tests

use_cpu_devices(8)
use_compilation_cache()


# optionalhook: `pytest tests/` still runs where pytest-markdown-docs is not installed.
@pytest.hookimpl(optionalhook=True)
def pytest_markdown_docs_markdown_it():
    """Parse pages the way the site does: expand includes, and run each page as one program.

    A reader pastes a page's blocks in order into one Python session, so each page's Python
    fences (with their `--8<--` lines expanded by pymdownx.snippets, as MkDocs does) are joined
    into one test. A comment before each block names it, so a failure points at the block.
    """
    from markdown_it import MarkdownIt

    from docs_build.folds import unfold
    from docs_build.outputs import parse_blocks, python_fences

    class PageProgram(MarkdownIt):
        def parse(self, src, env=None):
            tokens = super().parse(unfold(src), env)  # setup folds' blocks run too
            fences = python_fences(tokens)
            if not fences:
                return tokens
            blocks = parse_blocks(src, "page")
            fences[0].content = "\n".join(
                f"# ---- block {b.index + 1}, page line {b.line}: "
                f"{', '.join(b.includes) or 'inline'}\n{b.source}"
                for b in blocks
            )
            return [t for t in tokens if t not in fences[1:]]

    return PageProgram("commonmark")


# Files that build the whole site run last. On a fresh clone the build runs every page's
# program in a new interpreter; run after the other tests, it finds their compiled programs in
# the persistent cache and takes a third of the time. Files that start subprocesses of their
# own go first, so the two workers finish together.
FIRST = ("tests/exercises/test_solutions.py", "tests/training/multi_host/")
LAST = (
    "tests/test_site_hooks.py",
    "tests/test_site_search.py",
    "tests/test_home.py",
    "tests/test_build_talk.py",
    "tests/docs_build/test_markers.py",
    "tests/exercises/test_notebook.py",
)


@pytest.hookimpl(tryfirst=True)  # mark before pytest's -m deselects
def pytest_collection_modifyitems(config, items):
    # A page run as one program by pytest-markdown-docs repeats what the per-push build does
    # (docs_build.outputs runs the same blocks in one fresh interpreter, for the golden
    # outputs): daily, as a second harness.
    for item in items:
        if item.path.suffix == ".md":
            item.add_marker(pytest.mark.daily)

    def rank(item):
        path = item.path.relative_to(config.rootpath).as_posix()
        if path.startswith(LAST):
            return 2
        return 0 if path.startswith(FIRST) else 1

    items.sort(key=rank)  # stable: within a rank, the order pytest collected
