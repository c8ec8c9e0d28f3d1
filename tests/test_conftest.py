"""The root conftest.py: deprecations fail, and each page's fences run as one program."""

import warnings
from pathlib import Path

import pytest

import conftest


def test_a_deprecation_warning_fails_a_test():
    with pytest.raises(DeprecationWarning, match="old spelling"):
        warnings.warn("old spelling", DeprecationWarning, stacklevel=1)


def test_a_page_becomes_one_program_with_its_includes_expanded():
    page = (
        "# T\n\n"
        '```{.python}\n--8<-- "snippets/cpu_devices.py:setup"\n```\n\n'
        "```{.bash}\necho not python\n```\n\n"
        "```{.python notest}\nnot run\n```\n\n"
        "```{.python}\nprint(jax.device_count())\n```\n"
    )
    tokens = conftest.pytest_markdown_docs_markdown_it().parse(page)
    fences = [t for t in tokens if t.type == "fence"]
    assert [t.info for t in fences] == ["{.python}", "{.bash}", "{.python notest}"]
    program = fences[0].content
    assert program.splitlines() == [
        "# ---- block 1, page line 3: snippets/cpu_devices.py:setup",
        "import jax",
        "",
        'jax.config.update("jax_platforms", "cpu")  # CPU, even on a GPU machine',
        'jax.config.update("jax_num_cpu_devices", 8)  # as 8 devices',
        "",
        "# ---- block 2, page line 15: inline",
        "print(jax.device_count())",
    ]


def test_every_file_that_builds_the_site_runs_last():
    """A file that builds the site early runs every page's program before the other tests
    have filled the compilation cache, and the other worker then waits on its lock."""
    root = Path(conftest.__file__).parent
    building = sorted(
        p.relative_to(root).as_posix()
        for p in (root / "tests").rglob("test_*.py")
        if p != Path(__file__)
        and "built_site.built_site(" in p.read_text()
        and "browser" not in p.parts
    )
    assert building and all(path.startswith(conftest.LAST) for path in building), (
        building
    )
