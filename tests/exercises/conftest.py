"""Run the grader in this process on a file written to the test's tmp_path."""

import textwrap

import pytest

from snippets.exercises import check


@pytest.fixture
def grade(tmp_path, capsys):
    """grade(exercise, source) -> (exit status, what the grader printed, file path)."""

    def run(exercise: str, source: str, name: str = "my_solution.py"):
        path = tmp_path / name
        path.write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")
        capsys.readouterr()  # drop anything printed before
        status = check.main([exercise, str(path)])
        return status, capsys.readouterr().out, str(path)

    return run
