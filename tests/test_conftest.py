"""The root conftest.py: deprecations fail, and each page's fences run as one program."""

import warnings

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
