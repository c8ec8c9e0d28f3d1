"""The exercise pages: one per exercise, each showing its starter, its solution and its check."""

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from docs_build import graders
from snippets.exercises.registry import EXERCISE_LIST, EXERCISES

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def page(name: str) -> str:
    return (DOCS / "exercises" / f"{name}.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", list(EXERCISES))
def test_the_page_shows_the_starter_the_check_and_a_folded_solution(name):
    text = page(name)
    exercise = EXERCISES[name]
    blocks = re.findall(r"^```\{\.python\}\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    assert blocks[:2] == [
        '--8<-- "snippets/cpu_devices.py:setup"\n',
        f'--8<-- "snippets/exercises/{name}/starter.py"\n',
    ]
    shown = graders.fill(text, f"exercises/{name}.md", "https://github.com/o/r")
    assert f"nox -s check -- {name} my_solution.py" in shown
    assert f"python -m snippets.exercises.check {name} my_solution.py" in shown
    assert f"[`{name}.py`](graders/{name}.py)" in shown
    folded = text[text.index('??? success "Solution"') :]
    assert f'    --8<-- "{exercise.solution}"' in folded
    assert re.search(r'^\?\?\? tip "Hint 1', text, re.MULTILINE)
    assert f"]({Path('..', exercise.practises).as_posix()})" in text.split("\n\n")[1]
    assert "\n## Where next { data-search-exclude }\n" in text


@pytest.mark.parametrize("name", list(EXERCISES))
def test_every_annotation_of_the_solution_is_explained(name):
    """The solution's `# (n)!` markers and the numbered list under it stay in step."""
    folded = page(name)[page(name).index('??? success "Solution"') :]
    included = re.findall(r'^    --8<-- "(.+?):(.+?)"$', folded, re.MULTILINE)
    markers = []
    for path, section in included:
        text = (ROOT / path).read_text(encoding="utf-8")
        body = text.split(f"[start:{section}]")[1].split(f"[end:{section}]")[0]
        markers += re.findall(r"# \((\d+)\)!", body)
    items = re.findall(r"^    (\d+)\.  ", folded, re.MULTILINE)
    assert markers == items == [str(i) for i in range(1, len(items) + 1)]


def test_the_index_lists_every_exercise_with_its_page_in_reading_order():
    index = (DOCS / "exercises" / "index.md").read_text(encoding="utf-8")
    rows = re.findall(
        r"^\| \[.*?\]\((.*?)\) \| \[.*?\]\((.*?)\) \|", index, re.MULTILINE
    )
    assert rows == [(f"../{ex.practises}", f"{ex.name}.md") for ex in EXERCISE_LIST]


def test_the_navigation_follows_the_reading_order_of_the_pages():
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)
    nav = next(s["Exercises"] for s in config["nav"] if "Exercises" in s)
    assert nav == ["exercises/index.md"] + [
        f"exercises/{ex.name}.md" for ex in EXERCISE_LIST
    ]
    order = [
        page
        for section in config["nav"]
        for pages in section.values()
        if isinstance(pages, list)
        for page in pages
    ]
    positions = [order.index(ex.practises) for ex in EXERCISE_LIST]
    assert positions == sorted(positions)


def test_a_guide_page_names_its_exercise_by_the_exercise_page_title():
    """The link reads "FSDP, every parameter split over data", not the folder name."""
    titles = {name: page(name).split("\n")[0].removeprefix("# ") for name in EXERCISES}
    link = re.compile(r"\[([^\]]+)\]\((?:\.\./)*exercises/(\w+)\.md[)#]")
    linked = []
    for path in sorted(DOCS.rglob("*.md")):
        if path.parent.name == "exercises" or "notebooks" in path.parts:
            continue
        text = path.read_text(encoding="utf-8")
        for label, name in link.findall(text):
            if name == "index":  # the exercises' index, on the home page's path
                continue
            assert " ".join(label.split()) == titles[name], path.relative_to(DOCS)
            linked.append(name)
        # ... and says where its grader runs (the exercise pages say how).
        for item in re.findall(r"^- Practise it: (.*?)\n(?!  )", text, re.M | re.S):
            assert " ".join(item.split()).endswith(
                "checked by a grader you run in a clone or in its notebook."
            ), path.relative_to(DOCS)
    assert set(linked) == set(EXERCISES)  # every exercise is practised from its page


def test_every_exercise_page_says_how_to_run_the_grader_in_a_clone_and_without():
    """One admonition, written once (docs_build.graders), fills every page's marker: the
    clone's commands, and the one-file grader that the notebook fetches."""
    repo = "https://github.com/o/r"
    for name in EXERCISES:
        check = page(name).split("## Check your answer\n")[1].split("\n## ")[0]
        assert check.lstrip().startswith(graders.MARKER), name
        shown = graders.fill(check, f"exercises/{name}.md", repo)
        assert shown.lstrip().startswith('!!! tip "Two ways to run the grader"')
        said = " ".join(shown.split())
        assert f"**In a clone** of [the site's repository]({repo})" in said
        versions = graders.versions()
        pins = [f"`{p}=={versions[p]}`" for p in ("jax", "flax", "optax")]
        assert (
            "**Anywhere else**, in Colab or in a fresh Python 3.12 or newer with "
            f"{pins[0]}, {pins[1]}" in said
        )
        assert pins[2] in said
        assert ("orbax-checkpoint==" in said) == (name == "checkpoint_restore")
        assert "This page's notebook fetches it and grades the function" in said
        assert f"`python {name}.py my_solution.py`" in said
        assert "not with this page's notebook" not in said


def test_the_index_says_where_the_grader_runs():
    """The repository it links is the site's own, the Python the pins need is named, and the
    grader is not in what the project installs: its wheel holds the build's package only."""
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    index = (DOCS / "exercises" / "index.md").read_text(encoding="utf-8")
    steps = " ".join(index.split("## How to do one")[1].split("\n## ")[0].split())
    assert f"clone of [the site's repository]({config['repo_url']})" in steps
    assert pyproject["project"]["requires-python"] == ">=3.12"
    assert "Python 3.12 or newer" in steps
    assert (
        "snippets"
        not in pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
    )


def test_outside_a_clone_the_grader_is_not_found(tmp_path):
    """What the index says `python -m snippets.exercises.check` prints away from the clone:
    here the clone's root is taken off the path (this environment installs it, editable)."""
    root = str(ROOT)
    run = (
        "import runpy, sys\n"
        f"sys.path[:] = [p for p in sys.path if p not in ('', {root!r})]\n"
        "runpy.run_module('snippets.exercises.check', run_name='__main__')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", run], cwd=tmp_path, capture_output=True, text=True
    )
    assert proc.returncode != 0
    assert "No module named 'snippets'" in proc.stderr
    index = (DOCS / "exercises" / "index.md").read_text(encoding="utf-8")
    assert "`No module named 'snippets'`" in index
