"""docs_build.graders: each exercise's grader as one file, which grades as the clone's does."""

import ast
import importlib.util
import inspect
import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from docs_build import graders
from snippets.exercises import check, solution
from snippets.exercises.registry import EXERCISES, HERE

ROOT = Path(__file__).resolve().parents[2]
SITE = "https://example.org/docs/"


def answers(name: str) -> list[tuple[str, str, list[str]]]:
    """(what it is, the file's text, what the grader must say): the reference solution,
    then the wrong answers that the grader's own tests use (wrong_answers.toml)."""
    right = Path(inspect.getsourcefile(solution(name))).read_text(encoding="utf-8")
    wrong = tomllib.loads((HERE / name / "wrong_answers.toml").read_text("utf-8"))
    return [("right", right, [])] + [
        (w["mistake"], w["source"], w["says"]) for w in wrong["wrong"]
    ]


def verdict(out: str) -> tuple[list[str], str]:
    """What a grader decided: each report line (case or program, ok or FAILED), and the
    summary. An exception's own words can vary between two runs (Orbax reads arrays
    concurrently, and which wrong shape it names first varies), so they are not compared."""
    lines = [
        line for line in out.splitlines() if line.startswith(("  ok ", "  FAILED "))
    ]
    return lines, " ".join(out.split("\n\n")[-1].split())


_loaded: dict[str, object] = {}


def one_file_grader(name: str, folder: Path):
    """The exercise's one-file grader, written to `folder` and imported (once a session)."""
    if name not in _loaded:
        path = folder / f"{name}_grader.py"
        path.write_text(graders.source(name, SITE), encoding="utf-8")
        spec = importlib.util.spec_from_file_location(f"{name}_grader", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _loaded[name] = module
    return _loaded[name]


# Every push: the right answer and the first wrong one of three exercises (a result's layout
# under jit, a shard_map's program read, Flax models placed); the rest daily.
EVERY_PUSH = {"column_sums", "manual_dense", "fsdp_shard"}


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize(
    ("name", "source", "says"),
    [
        pytest.param(
            name,
            source,
            says,
            id=f"{name}: {what}",
            marks=() if name in EVERY_PUSH and i < 2 else pytest.mark.daily,
        )
        for name in EXERCISES
        for i, (what, source, says) in enumerate(answers(name))
    ],
)
def test_the_one_file_grader_says_what_the_command_line_says(
    name, source, says, tmp_path, tmp_path_factory, capsys
):
    path = tmp_path / "my_solution.py"
    path.write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")
    capsys.readouterr()
    status = check.main([name, str(path)])
    said = capsys.readouterr().out
    grader = one_file_grader(name, tmp_path_factory.getbasetemp())
    again = grader.main([str(path)])
    out = capsys.readouterr().out
    assert (again, verdict(out)) == (status, verdict(said))
    assert status == (1 if says else 0)
    assert verdict(said)[1].startswith("NOT YET: " if says else "PASSED: ")
    for message in says:  # the message meant for the mistake, from both
        assert " ".join(message.split()) in " ".join(out.split())


def test_a_one_file_grader_imports_nothing_of_the_repository_under_its_own_name():
    """Its modules import each other under the private package: a reader's own `snippets`
    (or a clone's) is never what it runs."""
    for name in EXERCISES:
        tree = ast.parse(graders.source(name, SITE))
        sources = next(
            node.value
            for node in tree.body
            if isinstance(node, ast.Assign) and node.targets[0].id == "_SOURCES"
        )
        for text in ast.literal_eval(sources).values():
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.ImportFrom):
                    named = [node.module or ""]
                elif isinstance(node, ast.Import):
                    named = [a.name for a in node.names]
                else:
                    continue
                assert all(n.split(".")[0] not in graders.OURS for n in named), name


def test_a_one_file_grader_needs_jax_numpy_flax_optax_only():
    """And Orbax for the exercise that restores a checkpoint with it."""
    needs = {name: graders.third_party(name) for name in EXERCISES}
    assert set().union(*needs.values()) <= graders.PACKAGES
    assert [n for n, found in needs.items() if "orbax" in found] == [
        "checkpoint_restore"
    ]
    assert needs["column_sums"] == {"jax", "numpy", "flax", "optax"}


def test_its_modules_are_the_repository_code_unchanged_but_for_imports():
    name = "ring_attention"
    text = graders.source(name, SITE)
    modules = graders.modules(name)
    assert "snippets.exercises.check" in modules
    assert f"snippets.exercises.{name}.grader" in modules
    assert "snippets.exercises.registry" not in modules  # the clone's command line only
    for module, original in modules.items():
        again = graders.renamed(original, f"_sharding_grader_{name}")
        changed = [
            new
            for old, new in zip(original.splitlines(), again.splitlines(), strict=True)
            if old != new
        ]
        assert all(line.lstrip().startswith("from _sharding") for line in changed)
        assert again.replace(f"_sharding_grader_{name}.", "") == original, module
        assert again in text or repr(again) in text


@pytest.mark.slow
def test_a_one_file_grader_runs_where_there_is_no_clone(tmp_path):
    """A fresh folder, this repository off the path: `python <name>.py my_solution.py`."""
    name = "shard_map_double"
    (tmp_path / f"{name}.py").write_text(graders.source(name, SITE), encoding="utf-8")
    right = Path(inspect.getsourcefile(solution(name))).read_text(encoding="utf-8")
    (tmp_path / "my_solution.py").write_text(right, encoding="utf-8")
    run = (
        "import runpy, sys\n"
        f"sys.path[:] = [p for p in sys.path if p not in ('', {str(ROOT)!r})]\n"
        f"sys.argv = [{name + '.py'!r}, 'my_solution.py']\n"
        "try:\n"
        f"    runpy.run_path({name + '.py'!r}, run_name='__main__')\n"
        "finally:\n"
        "    print(sorted({m.split('.')[0] for m in sys.modules} & {'snippets', 'docs_build'}))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "XLA_FLAGS")}
    proc = subprocess.run(
        [sys.executable, "-c", run],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-2] == f"PASSED: {name} is right on all 2 hidden cases."
    assert lines[-1] == "[]"  # nothing of this repository was imported


def test_check_grades_a_function_defined_in_a_notebook(tmp_path, capsys):
    grader = one_file_grader("shard_map_double", tmp_path)
    namespace = {"__name__": "__main__"}
    exec(
        "import jax\ndef shard_map_double(x):\n    return x * 2.0\n",
        namespace,
    )
    assert grader.check(namespace["shard_map_double"]) is None
    out = capsys.readouterr().out
    assert out.startswith("Checking shard_map_double from this notebook on 2 hidden")
    assert "it does not use jax.shard_map" in " ".join(out.split())
    assert out.split("\n\n")[-1].startswith("NOT YET: ")
    grader.check(solution("shard_map_double"))
    assert capsys.readouterr().out.splitlines()[-1] == (
        "PASSED: shard_map_double is right on all 2 hidden cases."
    )
    grader.check("shard_map_double")
    assert capsys.readouterr().out == (
        "check() takes your function shard_map_double itself, not a str: "
        "check(shard_map_double).\n"
    )
