"""docs_build.outputs: a page's fences, expanded as the site does, run as one cached program."""

import fcntl
import json
import textwrap
import threading
import time
from pathlib import Path

import pytest

from docs_build import outputs

SETUP = '```{.python}\n--8<-- "snippets/cpu_devices.py:setup"\n```\n'


def write_page(folder: Path, *fences: str, name: str = "page.md") -> Path:
    page = folder / name
    body = "\n".join(
        f"```{{.python}}\n{textwrap.dedent(code).strip()}\n```\n" for code in fences
    )
    page.write_text(f"# A page\n\n{SETUP}\nSome prose.\n\n{body}", encoding="utf-8")
    return page


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setattr(outputs, "CACHE", folder)
    return folder


@pytest.mark.parametrize(
    ("info", "lang", "options"),
    [
        ("{.python}", "python", set()),
        ("{.python notest}", "python", {"notest"}),
        ("python continuation", "python", {"continuation"}),
        (
            '{.text .output .no-copy title="Output"}',
            "text",
            {".output", ".no-copy", 'title="Output"'},
        ),
        ("", None, set()),
    ],
)
def test_fence_info_reads_plain_and_brace_forms(info, lang, options):
    assert outputs.fence_info(info) == (lang, options)


def test_blocks_expand_includes_and_skip_notest_and_other_languages(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        f"# T\n\n{SETUP}\n```{{.python notest}}\nnot run\n```\n\n```{{.bash}}\necho hi\n```\n"
        "\n```{.python}\nx = 1\n```\n",
        encoding="utf-8",
    )
    first, second = outputs.page_blocks(page)
    assert first.includes == ("snippets/cpu_devices.py:setup",)
    assert first.source.splitlines() == [
        "import jax",
        "",
        'jax.config.update("jax_platforms", "cpu")  # CPU, even on a GPU machine',
        'jax.config.update("jax_num_cpu_devices", 8)  # as 8 devices',
    ]
    assert (first.line, first.end_line) == (3, 5)
    assert second.includes == () and second.source == "x = 1\n" and second.index == 1


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        (
            "snippets/cpu_devices.py:no-such-section",
            "Snippet section 'no-such-section' could not",
        ),
        ("snippets/no_such_file.py", "could not be found"),
    ],
)
def test_a_missing_include_names_the_page_line_and_target(tmp_path, target, reason):
    page = tmp_path / "page.md"
    page.write_text(
        f'# T\n\n```{{.python}}\n--8<-- "{target}"\n```\n', encoding="utf-8"
    )
    with pytest.raises(outputs.SnippetError) as info:
        outputs.page_blocks(page)
    assert f"line 3: cannot include {target}" in str(info.value)
    assert reason in str(info.value)


def test_imported_snippets_are_followed_through_their_imports():
    found = outputs.imported_snippets(
        "import numpy\nfrom snippets.basics.partition_spec import pitfalls\n"
    )
    rel = {p.relative_to(outputs.ROOT).as_posix() for p in found}
    # pitfalls imports spec_entries, so that is part of its key too; the build's own
    # modules (docs_build, imported only under __main__) are keyed as tooling instead.
    assert rel == {
        "snippets/__init__.py",
        "snippets/basics/__init__.py",
        "snippets/basics/partition_spec/__init__.py",
        "snippets/basics/partition_spec/pitfalls.py",
        "snippets/basics/partition_spec/spec_entries.py",
    }


def test_cache_key_follows_the_code_the_versions_and_nothing_else(
    tmp_path, monkeypatch
):
    blocks = outputs.page_blocks(write_page(tmp_path, "print(1)"))
    key = outputs.cache_key(blocks)
    assert (
        outputs.cache_key(outputs.page_blocks(write_page(tmp_path, "print(1)"))) == key
    )
    assert (
        outputs.cache_key(outputs.page_blocks(write_page(tmp_path, "print(2)"))) != key
    )
    monkeypatch.setattr(outputs, "versions", lambda: {"jax": "0.0.0"})
    assert outputs.cache_key(blocks) != key


def test_cache_key_follows_the_python_and_every_pinned_package(tmp_path, monkeypatch):
    blocks = outputs.page_blocks(write_page(tmp_path, "print(1)"))
    key = outputs.cache_key(blocks)
    assert {"pytest==9.2.0", "ruff==0.17.6"} <= set(outputs.pinned_requirements())
    monkeypatch.setattr(outputs.platform, "python_version", lambda: "3.99.0")
    assert outputs.cache_key(blocks) != key
    monkeypatch.undo()
    pins = outputs.pinned_requirements()
    moved = [p.replace("pytest==9.2.0", "pytest==9.9.9") for p in pins]
    monkeypatch.setattr(outputs, "pinned_requirements", lambda: moved)
    assert outputs.cache_key(blocks) != key


def test_every_module_the_figures_are_drawn_with_is_part_of_the_key():
    """A `<!-- draw: ... -->` figure is cached with the page's outputs: render.py draws it,
    so render.py and every docs_build module it reaches (at any depth) are in TOOLING, and
    editing one (a chart's layout, a published peak) draws the figures again."""
    import re
    from pathlib import Path

    here = Path(outputs.__file__).resolve().parent
    todo, seen = ["render.py"], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        text = (here / name).read_text()
        found = re.findall(r"from docs_build import (\w+)", text)
        found += re.findall(r"from docs_build\.(\w+) import", text)
        todo += [f"{m}.py" for m in found if (here / f"{m}.py").is_file()]
    assert {"pipeline_chart.py", "roofline.py", "costmodel.py"} <= seen
    missing = sorted(seen - set(outputs.TOOLING))
    assert not missing, f"add {missing} to outputs.TOOLING"


def test_a_module_the_page_launches_is_part_of_its_key(tmp_path, monkeypatch):
    """`python -m snippets.x` in a subprocess: editing that module re-runs the page."""
    (tmp_path / "snippets" / "tool").mkdir(parents=True)
    (tmp_path / "snippets" / "__init__.py").write_text("")
    (tmp_path / "snippets" / "tool" / "__init__.py").write_text("")
    worker = tmp_path / "snippets" / "tool" / "worker.py"
    worker.write_text("print('one')\n")
    monkeypatch.setattr(outputs, "ROOT", tmp_path)
    code = 'import subprocess, sys\nsubprocess.run([sys.executable, "-m", "snippets.tool.worker"])\n'
    found = outputs.imported_snippets(code)
    assert worker in found
    page = write_page(tmp_path, code)
    key = outputs.cache_key(outputs.page_blocks(page))
    worker.write_text("print('two')\n")
    assert outputs.cache_key(outputs.page_blocks(page)) != key


@pytest.mark.slow
def test_a_page_runs_once_then_comes_from_the_cache(tmp_path, cache):
    page = write_page(tmp_path, "n = jax.device_count()", "print(n, 'devices')")
    first = outputs.ensure([page])[str(page)]
    assert first.ran
    assert first.blocks == [[], [], [{"text": "8 devices\n"}]]
    again = outputs.ensure([page])[str(page)]
    assert not again.ran and again.blocks == first.blocks
    write_page(tmp_path, "n = jax.device_count()", "print(n * 2, 'devices')")
    edited = outputs.ensure([page])[str(page)]
    assert edited.ran and edited.blocks[2] == [{"text": "16 devices\n"}]


def test_a_page_another_process_is_running_is_waited_for_not_run_again(tmp_path, cache):
    # pytest's workers and the build each bring every page up to date: while one runs a
    # page, the others wait for it and take what it stored instead of running it again.
    page = write_page(tmp_path, "print('ran here')")
    blocks = outputs.page_blocks(page)
    stored = outputs.cache_file(blocks[0].page)
    cache.mkdir()
    lock = open(stored.with_suffix(".lock"), "w")  # noqa: SIM115 (the other run closes it)
    fcntl.flock(lock, fcntl.LOCK_EX)

    def the_other_run():
        time.sleep(0.5)
        key = outputs.cache_key(blocks)
        text = [[{"text": "ran there\n"}]]
        stored.write_text(json.dumps({"key": key, "blocks": text}), encoding="utf-8")
        lock.close()

    other = threading.Thread(target=the_other_run)
    other.start()
    heard = []
    result = outputs.ensure([page], on_run=lambda *args: heard.append(args))
    other.join()
    assert result[str(page)].blocks == [[{"text": "ran there\n"}]]
    assert not result[str(page)].ran and heard == []


@pytest.mark.daily  # the runner's rarer paths; a failing block is named per push
@pytest.mark.slow
def test_on_run_hears_of_each_page_that_ran_and_of_no_cached_one(tmp_path, cache):
    page = write_page(tmp_path, "print('once')")
    heard = []
    first = outputs.ensure([page], on_run=lambda *args: heard.append(args))
    assert heard == [(page, first[str(page)])]
    outputs.ensure([page], on_run=lambda *args: heard.append(args))  # from the cache
    assert len(heard) == 1


def test_a_page_is_parsed_again_when_a_file_it_includes_changes(tmp_path, monkeypatch):
    monkeypatch.setattr(outputs, "ROOT", tmp_path)
    options = {**outputs.SNIPPETS_OPTIONS, "base_path": [str(tmp_path)]}
    monkeypatch.setattr(outputs, "SNIPPETS_OPTIONS", options)
    (tmp_path / "snippet.py").write_text(
        "# --8<-- [start:s]\nx = 1\n# --8<-- [end:s]\n"
    )
    page = tmp_path / "page.md"
    page.write_text('# P\n\n```python\n--8<-- "snippet.py:s"\n```\n')
    assert [b.source for b in outputs.page_blocks(page)] == ["x = 1\n"]
    (tmp_path / "snippet.py").write_text(
        "# --8<-- [start:s]\nx = 2\n# --8<-- [end:s]\n"
    )
    assert [b.source for b in outputs.page_blocks(page)] == ["x = 2\n"]


@pytest.mark.daily  # the runner's rarer paths; a failing block is named per push
@pytest.mark.slow
def test_a_page_gets_no_devices_it_did_not_set_up(tmp_path, cache, monkeypatch):
    # As in a reader's fresh Python: the build's own device settings never reach the page.
    monkeypatch.setenv("JAX_NUM_CPU_DEVICES", "8")
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
    page = tmp_path / "forgot.md"
    page.write_text(
        "# No setup\n\n```{.python}\nimport jax\n\nprint(jax.device_count())\n```\n",
        encoding="utf-8",
    )
    assert outputs.ensure([page])[str(page)].blocks == [[{"text": "1\n"}]]


@pytest.mark.daily  # the runner's rarer paths; a failing block is named per push
@pytest.mark.slow
def test_pages_forked_one_after_another_share_nothing(tmp_path, cache):
    """Each page gets a process of its own, though the build forks it from one that has
    imported jax already: nothing a page did reaches the next one."""
    first = tmp_path / "first.md"
    first.write_text(
        "# A\n\n```{.python}\nimport sys\n\nsys.modules['left'] = 1\nx = 1\n"
        "print('set')\n```\n",
        encoding="utf-8",
    )
    second = tmp_path / "second.md"
    second.write_text(
        "# B\n\n```{.python}\nimport sys\n\n"
        "print('left' in sys.modules, 'x' in globals())\n```\n",
        encoding="utf-8",
    )
    outputs.ensure([first], jobs=1)
    assert outputs.ensure([second], jobs=1)[str(second)].blocks == [
        [{"text": "False False\n"}]
    ]


@pytest.mark.daily  # the runner's rarer paths; a failing block is named per push
@pytest.mark.slow
def test_a_page_sees_the_environment_of_its_run_not_of_an_earlier_one(
    tmp_path, cache, monkeypatch
):
    page = write_page(tmp_path, "import os", "print(os.environ.get('DOCS_TEST_MARK'))")
    for mark in ("first", "second"):
        monkeypatch.setenv("DOCS_TEST_MARK", mark)
        ran = outputs.ensure([page], jobs=1, force=True)[str(page)]
        assert ran.blocks[-1] == [{"text": f"{mark}\n"}]


@pytest.mark.daily  # the runner's rarer paths; a failing block is named per push
@pytest.mark.slow
@pytest.mark.parametrize("fresh", ["0", "1"], ids=["forked", "fresh interpreter"])
def test_a_page_whose_process_dies_is_reported_with_its_exit_code(
    tmp_path, cache, monkeypatch, fresh
):
    monkeypatch.setenv("DOCS_FRESH_PROCESS", fresh)
    page = tmp_path / "dies.md"
    page.write_text(
        "# Dies\n\n```{.python}\nimport os\n\nos._exit(3)\n```\n", encoding="utf-8"
    )
    with pytest.raises(outputs.SnippetError, match=r"died \(exit code 3\)"):
        outputs.ensure([page])
    ok = write_page(tmp_path, "print('after')", name="after.md")
    assert outputs.ensure([ok])[str(ok)].blocks[-1] == [{"text": "after\n"}]


def test_draw_lines_after_a_fence_belong_to_it_and_to_the_key(tmp_path):
    page = write_page(tmp_path, "a = 1", "b = 2")
    text = page.read_text(encoding="utf-8")
    drawn = text.replace(
        "a = 1\n```\n", "a = 1\n```\n\n1.  a note\n\n<!-- draw: f(a) -->\n", 1
    )
    blocks = outputs.parse_blocks(drawn, "page.md")
    assert [b.draws for b in blocks] == [(), ("f(a)",), ()]
    assert outputs.cache_key(blocks) != outputs.cache_key(
        outputs.parse_blocks(text, "page.md")
    )


@pytest.mark.slow
def test_a_drawing_is_made_from_the_blocks_variables(tmp_path, cache):
    page = write_page(
        tmp_path,
        "from jax import P\nfrom jax.sharding import NamedSharding\n"
        "mesh = jax.make_mesh((8,), ('x',))\n"
        "rows = jax.device_put(jax.numpy.arange(8.0)[:, None], NamedSharding(mesh, P('x')))",
    )
    page.write_text(
        page.read_text(encoding="utf-8")
        + '\n<!-- draw: per_device_table(rows, rows * 2, "doubled") -->\n',
        encoding="utf-8",
    )
    (chunk,) = outputs.ensure([page])[str(page)].blocks[-1]
    assert chunk["alt"].splitlines()[:3] == [
        "doubled",
        "device | before | after",
        "cpu:0 | 0 | 0",
    ]
    assert chunk["html"].startswith('<table class="per-device"')


@pytest.mark.slow
def test_a_block_runs_without_the_builds_own_future_imports(tmp_path, cache):
    """A reader's Python evaluates a function's annotations when it is defined: a name
    missing there fails the paste, so it fails the build too (outputs.py's own
    `from __future__ import annotations` must not reach the page's code)."""
    page = write_page(tmp_path, "def f(mesh: Mesh) -> None:\n    pass")
    with pytest.raises(outputs.SnippetError) as info:
        outputs.ensure([page])
    assert "NameError: name 'Mesh' is not defined" in str(info.value)


@pytest.mark.slow
def test_a_failing_block_is_named_with_its_traceback(tmp_path, cache):
    page = write_page(
        tmp_path, "x = 1", "def f():\n    raise ValueError('boom')\n\nf()"
    )
    with pytest.raises(outputs.SnippetError) as info:
        outputs.ensure([page])
    message = str(info.value)
    assert f"Snippet failed: {page} block 3 (line 13: inline code)" in message
    assert "Traceback (most recent call last)" in message
    assert "in f\n    raise ValueError('boom')" in message
    assert message.rstrip().endswith("ValueError: boom")
    assert not list(cache.glob("*.json"))  # nothing cached for a failed page


@pytest.mark.daily  # the runner's rarer paths; a failing block is named per push
@pytest.mark.slow
def test_a_failure_names_each_block_its_traceback_passes_through(tmp_path, cache):
    """A function defined in one block and failing in a later one: the build's message names
    both blocks of the page (not `<python-input-N>`, the reader's names) and quotes their
    lines."""
    page = write_page(tmp_path, "def f():\n    raise ValueError('boom')", "x = 1\nf()")
    with pytest.raises(outputs.SnippetError) as info:
        outputs.ensure([page])
    message = str(info.value)
    _, defined, called = (f"<{b.name}>" for b in outputs.page_blocks(page))
    assert f"Snippet failed: {called[1:-1]}\n" in message
    assert f'File "{called}", line 2, in <module>' in message
    assert f'File "{defined}", line 2, in f' in message
    assert "    f()\n" in message and "    raise ValueError('boom')\n" in message
    assert "python-input" not in message


@pytest.mark.daily  # the runner's rarer paths; a failing block is named per push
@pytest.mark.slow
def test_printed_tracebacks_name_blocks_as_the_reader_python_does(tmp_path, cache):
    """What a page prints is what a reader who pastes its blocks in order sees: Python 3.13's
    interactive interpreter names the N-th input `<python-input-N>`, lines counted from its
    start; the build's own names for the blocks never show."""
    page = write_page(
        tmp_path,
        "def f():\n    raise ValueError('boom')",
        """
        import traceback

        try:
            f()
        except ValueError:
            print(traceback.format_exc())
        """,
    )
    (printed,) = outputs.ensure([page])[str(page)].blocks[2]
    assert 'File "<python-input-2>", line 4, in <module>\n    f()' in printed["text"]
    assert (
        "File \"<python-input-1>\", line 2, in f\n    raise ValueError('boom')"
        in printed["text"]
    )
    assert ".md block" not in printed["text"]


@pytest.mark.daily  # the runner's rarer paths; a failing block is named per push
@pytest.mark.slow
def test_a_deprecation_warning_fails_the_page(tmp_path, cache):
    page = write_page(
        tmp_path, "import warnings\nwarnings.warn('old API', DeprecationWarning)"
    )
    with pytest.raises(outputs.SnippetError, match="DeprecationWarning: old API"):
        outputs.ensure([page])


@pytest.mark.daily  # the runner's rarer paths; a failing block is named per push
@pytest.mark.slow
def test_the_command_line_reports_failures_and_exits_non_zero(tmp_path, cache, capsys):
    page = write_page(tmp_path, "1 / 0")
    assert outputs.main([str(page)]) == 1
    assert "ZeroDivisionError: division by zero" in capsys.readouterr().err


@pytest.mark.daily  # the runner's rarer paths; a failing block is named per push
@pytest.mark.slow
def test_pages_not_started_after_a_failure_do_not_hide_it(tmp_path, cache):
    pages = [write_page(tmp_path, "1 / 0", name="a.md")]
    pages += [write_page(tmp_path, "x = 1", name=f"p{i}.md") for i in range(4)]
    with pytest.raises(outputs.SnippetError, match="ZeroDivisionError"):
        outputs.ensure(pages, jobs=1)
