"""Where things live: content and machinery apart, one naming rule, no import circles."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SNIPPETS = ROOT / "snippets"
SECTIONS = ("basics", "concepts", "training", "advanced", "tools", "guides")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def snippet_imports(path: Path) -> set[str]:
    """The `snippets` modules a file imports, anywhere in it (functions included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
    return {name for name in found if name.startswith("snippets.")}


def test_no_import_circles_among_the_snippets():
    files = {module_name(p): p for p in SNIPPETS.rglob("*.py")}
    graph = {
        name: {i for i in snippet_imports(path) if i in files and i != name}
        for name, path in files.items()
    }
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> None:
        if name in path:
            cycle = [*path[path.index(name) :], name]
            raise AssertionError("import circle: " + " -> ".join(cycle))
        if name in done:
            return
        for other in sorted(graph[name]):
            visit(other, [*path, name])
        done.add(name)

    for name in sorted(graph):
        visit(name, [])


def test_snippets_hold_no_build_machinery():
    """The build's modules live in docs_build/; snippets use it only to run standalone."""
    machinery = ("mkdocs", "nbformat", "jupytext", "nbclient", "markdown_it")
    for path in SNIPPETS.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:  # module level: what a page's import would run
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                assert top not in (*machinery, "docs_build"), f"{path}: imports {name}"


def test_each_page_has_its_snippets_and_tests_under_the_same_name():
    for section in SECTIONS:
        for package in (SNIPPETS / section).iterdir():
            if not package.is_dir() or package.name.startswith("__"):
                continue
            page = ROOT / "docs" / section / (package.name.replace("_", "-") + ".md")
            assert page.exists(), f"{package} serves no page ({page} is missing)"
            tests = ROOT / "tests" / section / package.name
            assert tests.is_dir(), f"{package} has no tests at {tests}"


def test_the_build_package_imports_without_a_path_trick(tmp_path):
    """The MkDocs hook imports `docs_build` as an installed package (editable, by nox from
    pyproject's [build-system]): from any directory, and with no `sys.path` edit of its own."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    found = subprocess.run(
        [sys.executable, "-c", "import docs_build.hooks as h; print(h.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(found) == ROOT / "docs_build" / "hooks.py"
    for path in (ROOT / "docs_build").rglob("*.py"):
        assert "sys.path" not in path.read_text(encoding="utf-8"), path
