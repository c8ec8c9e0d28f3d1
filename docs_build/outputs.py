"""Run the code each page shows and keep what every block printed and drew.

A page is one program: its Python fences, with their `--8<--` include lines expanded exactly as
the site expands them, run in order in one fresh interpreter with no devices set up for it. That is
what a reader does who pastes the blocks of a page, in order, into a fresh Python.

Results are cached per page in `.cache/outputs/`, keyed by the code the page runs, the source
of every `snippets` module that code imports, this tooling, and the installed versions of the
packages the examples use. A warm build with nothing changed runs nothing; an edited snippet
re-runs only the pages that show it.

    python -m docs_build.outputs            # bring every page's outputs up to date
    python -m docs_build.outputs --force    # run every page again
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import fcntl
import functools
import hashlib
import importlib.metadata
import json
import linecache
import os
import platform
import re
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
# XLA's CPU code depends on the instruction set. DOCS_CPU_MAX_ISA (AVX2, SSE4_2, ...) runs
# every page as a CPU without the newer instructions would (XLA's --xla_cpu_max_isa), into a
# cache of its own: `nox -s isa` checks that the golden outputs hold there too.
ISA = os.environ.get("DOCS_CPU_MAX_ISA", "")
CACHE = ROOT / ".cache" / (f"outputs-{ISA.lower()}" if ISA else "outputs")
PYPROJECT = ROOT / "pyproject.toml"

# The options mkdocs.yml gives pymdownx.snippets; the tests and this runner expand the same way.
SNIPPETS_OPTIONS = {
    "base_path": [str(ROOT)],
    "check_paths": True,
    "dedent_subsections": True,
}
PYTHON_LANGS = {"py", "python", "python3"}
VERSIONED = (
    "jax",
    "jaxlib",
    "flax",
    "optax",
    "numpy",
    "rich",
    "matplotlib",
    "orbax-checkpoint",
    "grain",
)
INCLUDE = re.compile(
    r"""^[ \t]*-+8<-+[ \t]+["']?([^"'\s]+)["']?[ \t]*$""", re.MULTILINE
)
LAUNCHED = re.compile(r"snippets(?:\.[A-Za-z_]\w*)+")
# What this tooling itself is made of: a change to any of these re-runs every page.
# Environment variables that set up devices: a page's run never inherits them.
PRESETS = ("JAX_NUM_CPU_DEVICES", "XLA_FLAGS", "JAX_PLATFORMS", "JAX_PLATFORM_NAME")
# The build's own code that shapes a page's outputs and figures: an edit to any of it makes
# the cached outputs stale (render.py draws with the others; roofline.py reads costmodel.py).
TOOLING = (
    "outputs.py",
    "render.py",
    "timeline.py",
    "figures.py",
    "devices.py",
    "pipeline_chart.py",
    "roofline.py",
    "costmodel.py",
)


# The file names of a page's blocks (Block.filename), as tracebacks print them.
PYTHON_INPUT = re.compile(r"<python-input-\d+>")


class SnippetError(Exception):
    """A page's code could not be assembled, or a block failed when run."""


@dataclass(frozen=True)
class Block:
    """One runnable Python fence of a page, with its include lines expanded."""

    page: str  # path relative to docs/
    index: int  # position among the page's runnable fences, from 0
    line: int  # line of the opening fence in the page, from 1
    end_line: int  # line of the closing fence
    includes: tuple[str, ...]  # the `file:section` targets it includes
    source: str  # the code, as a reader sees it
    # Drawings the build makes from the block's variables once it has run: the expressions
    # of the `<!-- draw: ... -->` lines after the fence (see render.DRAWINGS).
    draws: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        where = ", ".join(self.includes) if self.includes else "inline code"
        return f"{self.page} block {self.index + 1} (line {self.line}: {where})"

    @property
    def filename(self) -> str:
        """The file name the block's code is compiled under: what tracebacks, and JAX's
        messages that point at the code, print on the page.

        A reader who pastes a page's blocks in order into Python's interactive interpreter
        (3.13 and later; 3.12's calls every input `<stdin>`) sees `<python-input-N>` for the
        N-th input from 0, with its lines counted from the start of that input, as the block
        is compiled here. A name of its own for each block also keeps the source lines a
        traceback quotes right when a function defined in one block fails in a later one.
        The build's own failure messages name the page's block instead (`_exec_blocks`).
        """
        return f"<python-input-{self.index}>"


def fence_info(info: str) -> tuple[str | None, set[str]]:
    """Language and options of a fence, in plain (`python notest`) or brace form."""
    words = info.strip().strip("{}").split()
    lang = next((w[1:] for w in words if w.startswith(".")), None)
    if lang is None and words and not info.strip().startswith("{"):
        lang = words[0]
    return lang, {w for w in words if w not in {lang, f".{lang}"}}


def _expander():
    import markdown

    md = markdown.Markdown(
        extensions=["pymdownx.snippets"],
        extension_configs={"pymdownx.snippets": SNIPPETS_OPTIONS},
    )
    return md.preprocessors["snippet"]


def expand(code: str, where: str) -> str:
    """Replace the `--8<--` lines of a code fence with what they include, as the site does."""
    if not INCLUDE.search(code):
        return code
    from pymdownx.snippets import SnippetMissingError

    try:
        lines = _expander().run(code.splitlines())
    except SnippetMissingError as err:
        targets = ", ".join(INCLUDE.findall(code))
        raise SnippetError(f"{where}: cannot include {targets}: {err}") from None
    return "\n".join(lines).strip("\n") + "\n"


def page_blocks(page: Path) -> list[Block]:
    """The runnable Python fences of a page, in order. Fences marked `notest` are not run.

    A build asks for a page's blocks several times (to run it, for its notebook, to place its
    outputs): they are parsed again only when the page or a file it includes has changed.
    """
    rel = page.relative_to(DOCS).as_posix() if page.is_relative_to(DOCS) else str(page)
    text = page.read_text(encoding="utf-8")
    included = []
    for target in sorted(set(INCLUDE.findall(text))):
        try:
            content = (ROOT / target.split(":", 1)[0]).read_bytes()
        except OSError:
            content = None  # expanding it reports the missing file
        included.append((target, content))
    key = (rel, text, tuple(included))
    if len(_parsed) > 1000:  # a long `mkdocs serve` session: old versions of pages
        _parsed.clear()
    if key not in _parsed:
        _parsed[key] = parse_blocks(text, rel)
    return list(_parsed[key])


_parsed: dict[tuple, list[Block]] = {}


def python_fences(tokens: list) -> list:
    """The markdown-it fence tokens that hold runnable Python (not marked `notest`)."""
    fences = []
    for token in tokens:
        if token.type == "fence" and token.map:
            lang, options = fence_info(token.info)
            if lang in PYTHON_LANGS and "notest" not in options:
                fences.append(token)
    return fences


def parse_blocks(text: str, page: str) -> list[Block]:
    """The runnable Python fences of a page's text, those in setup folds included."""
    from markdown_it import MarkdownIt

    from docs_build.folds import unfold
    from docs_build.imports import dedupe

    tokens = MarkdownIt("commonmark").parse(unfold(text))
    fences = python_fences(tokens)
    return [
        Block(
            page=page,
            index=i,
            line=token.map[0] + 1,
            end_line=token.map[1],
            includes=tuple(INCLUDE.findall(token.content)),
            # a block that joins several sections' imports shows each import once, as
            # the site does (docs_build.imports)
            source=dedupe(expand(token.content, f"{page} line {token.map[0] + 1}")),
            draws=draws_after(tokens, token),
        )
        for i, token in enumerate(fences)
    ]


DRAW = re.compile(r"^<!--\s*draw:\s*(.+?)\s*-->\s*$")


def draws_after(tokens: list, fence) -> tuple[str, ...]:
    """The `<!-- draw: ... -->` lines between a fence and the next fence, in order."""
    found = []
    for token in tokens[tokens.index(fence) + 1 :]:
        if token.type == "fence":
            break
        match = (
            DRAW.match(token.content.strip()) if token.type == "html_block" else None
        )
        if match:
            found.append(match.group(1))
    return tuple(found)


def _snippet_module_file(name: str) -> Path | None:
    parts = name.split(".")
    if parts[0] != "snippets":
        return None
    base = ROOT.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def imported_snippets(code: str, launched: bool = True) -> set[Path]:
    """Files of the `snippets` modules that `code` imports, followed through their imports;
    with `launched`, also those it names to start (`python -m snippets...`)."""
    found: set[Path] = set()
    pending = [code]
    while pending:
        tree = ast.parse(pending.pop())
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            if (
                launched
                and isinstance(node, ast.Constant)
                and isinstance(node.value, str)
            ):
                # A module the code launches, as in `python -m snippets.training.multi_host.worker`.
                names = [node.value] if LAUNCHED.fullmatch(node.value) else []
            for name in names:
                parts = name.split(".")
                for i in range(1, len(parts) + 1):
                    path = _snippet_module_file(".".join(parts[:i]))
                    if path and path not in found:
                        found.add(path)
                        pending.append(path.read_text(encoding="utf-8"))
    return found


def pinned_requirements() -> list[str]:
    """Every pin in pyproject.toml, in any dependency group (`name==version` strings)."""
    groups = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    return sorted(
        requirement
        for group in groups["dependency-groups"].values()
        for requirement in group
        if isinstance(requirement, str)
    )


@functools.cache
def _installed_versions() -> tuple[tuple[str, str], ...]:
    out = {}
    for name in VERSIONED:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "missing"
    return tuple(out.items())


def versions() -> dict[str, str]:
    """Installed versions of the packages the examples run on.

    Read once per process (each read scans the installed distributions, and every page's
    cache key asks): a package installed while `mkdocs serve` runs is seen after a restart.
    """
    return dict(_installed_versions())


def cache_key(blocks: list[Block]) -> str:
    digest = hashlib.sha256()
    here = Path(__file__).resolve().parent
    for name in TOOLING:
        digest.update((here / name).read_bytes())
    digest.update(json.dumps(versions(), sort_keys=True).encode())
    # Every pin, and the interpreter: a page's output may change with any of them. The pins
    # as written, not as installed, so that the tests' and the docs' environments (which
    # hold different tools) share one cache; what the pages import is keyed as installed.
    digest.update(json.dumps(pinned_requirements()).encode())
    digest.update(f"python {platform.python_version()} isa {ISA}".encode())
    code = "\n".join(block.source for block in blocks)
    digest.update(code.encode())
    digest.update(json.dumps([block.draws for block in blocks]).encode())
    for path in sorted(imported_snippets(code)):
        digest.update(str(path.relative_to(ROOT)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def cache_file(page: str) -> Path:
    return CACHE / (page.removesuffix(".md").replace("/", "__") + ".json")


def load_cached(page: str, key: str) -> list[list[dict]] | None:
    try:
        data = json.loads(cache_file(page).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data["blocks"] if data.get("key") == key else None


@dataclass
class PageResult:
    page: str
    ran: bool  # False when the cache had it
    seconds: float
    blocks: list[
        list[dict]
    ]  # per block: chunks {"text": ...} or {"svg": ..., "alt": ...}


def page_env() -> dict[str, str]:
    return {
        # Nothing that would give the page devices it did not set up itself.
        **{k: v for k, v in os.environ.items() if k not in PRESETS},
        "MPLBACKEND": "Agg",  # plots are captured as SVG, never shown in a window
        **({"XLA_FLAGS": f"--xla_cpu_max_isa={ISA}"} if ISA else {}),
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }


# Importing jax, flax, optax and matplotlib costs a page's process about 1.5 s of CPU, more
# than most pages' own code. So the build keeps processes that have imported them (and
# started nothing: no JAX backend, no devices), one per page running at once, and forks one
# for each page: the page still gets a process of its own, a new __main__ and no devices it
# did not set up, as a reader's fresh Python gives it. Where fork is missing, or
# DOCS_FRESH_PROCESS=1, each page starts a new interpreter instead.
PRELOADED = (
    "jax",
    "jax.numpy",
    "flax.nnx",
    "optax",
    "matplotlib.pyplot",
    "rich.console",
)
_idle_forkers: list[tuple[tuple, subprocess.Popen]] = []
_forkers_lock = threading.Lock()


def _forker_key(env: dict[str, str]) -> tuple:
    """What a forker was started with: the page's environment and this tooling's code (a
    long `mkdocs serve` may see the code that runs the blocks edited)."""
    here = Path(__file__).resolve().parent
    return tuple(sorted(env.items())), tuple((here / n).read_bytes() for n in TOOLING)


def _take_forker(env: dict[str, str]) -> tuple[tuple, subprocess.Popen]:
    """An idle forker started as `env` and this tooling ask, or a new one (others stop),
    with the key to give it back under."""
    key = _forker_key(env)
    with _forkers_lock:
        while _idle_forkers:
            started_with, forker = _idle_forkers.pop()
            if started_with == key and forker.poll() is None:
                return key, forker
            forker.stdin.close()  # it exits when its input ends
    return key, subprocess.Popen(
        [sys.executable, "-m", "docs_build.outputs", "--forker"],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def _run_blocks(spec: Path, result: Path, tmp: Path) -> tuple[int, str]:
    """Run a page's blocks in a process of their own: (exit code, what it wrote to stderr)."""
    if not hasattr(os, "fork") or os.environ.get("DOCS_FRESH_PROCESS") == "1":
        command = [sys.executable, "-m", "docs_build.outputs", "--exec"]
        proc = subprocess.run(
            [*command, str(spec), str(result)],
            cwd=ROOT,
            env=page_env(),
            capture_output=True,
            text=True,
        )
        return proc.returncode, proc.stderr
    env = page_env()
    key, forker = _take_forker(env)
    stderr = tmp / "stderr.txt"
    forker.stdin.write(json.dumps([str(spec), str(result), str(stderr)]) + "\n")
    forker.stdin.flush()
    reply = forker.stdout.readline()
    if not reply:  # the forker itself died
        return forker.wait(), ""
    with _forkers_lock:
        _idle_forkers.append((key, forker))
    return int(reply), stderr.read_text(encoding="utf-8", errors="replace")


def _forker() -> int:
    """Import the heavy modules once, then fork a child per request line on stdin
    (`[spec, result, stderr file]`), wait for it, and answer its exit code."""
    import importlib

    for name in PRELOADED:
        importlib.import_module(name)
    for line in sys.stdin:
        spec, result, stderr = json.loads(line)
        sys.stdout.flush()
        pid = os.fork()
        # The child is the page's process: it exits as an interpreter does, atexit and all.
        if pid == 0:
            try:
                sys.stdin.close()
                with open(stderr, "w") as err, open(os.devnull, "w") as out:
                    os.dup2(out.fileno(), 1)
                    os.dup2(err.fileno(), 2)
                code = _exec_blocks(Path(spec), Path(result))
            except BaseException:
                traceback.print_exc()
                os._exit(1)
            sys.exit(code)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), flush=True)
    return 0


def run_page(page: Path, blocks: list[Block], key: str) -> PageResult:
    """Run a page's blocks in a fresh interpreter and store what they printed."""
    rel = blocks[0].page if blocks else page.name
    start = time.perf_counter()
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        spec, result = Path(tmp, "blocks.json"), Path(tmp, "result.json")
        spec.write_text(json.dumps([asdict(b) for b in blocks]), encoding="utf-8")
        returncode, stderr = _run_blocks(spec, result, Path(tmp))
        if returncode != 0 or not result.exists():
            try:
                failure = json.loads(result.read_text(encoding="utf-8"))["error"]
            except (OSError, ValueError, KeyError):
                failure = f"{rel}: the page's program died (exit code {returncode})."
            raise SnippetError(f"{failure}\n{stderr.strip()}".strip())
        outputs = json.loads(result.read_text(encoding="utf-8"))["blocks"]
    # Write then rename, so a build running beside this one never reads half a file.
    target = cache_file(rel)
    partial = target.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps({"key": key, "blocks": outputs}), encoding="utf-8")
    partial.replace(target)
    return PageResult(rel, True, time.perf_counter() - start, outputs)


def run_once(page: Path, blocks: list[Block], key: str, force: bool) -> PageResult:
    """`run_page`, unless another process runs the same page now: pytest's workers and the
    build each bring every page up to date, so on a fresh clone they would run each page
    twice. The first to lock the page's cache file runs it; the others wait, then take its
    result from the cache (as not run here)."""
    rel = blocks[0].page
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(cache_file(rel).with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        cached = None if force else load_cached(rel, key)
        if cached is not None:
            return PageResult(rel, False, 0.0, cached)
        return run_page(page, blocks, key)


def ensure(
    pages: list[Path],
    jobs: int | None = None,
    force: bool = False,
    on_run: Callable[[Path, PageResult], None] | None = None,
) -> dict[str, PageResult]:
    """Bring the outputs of `pages` up to date, running stale pages in parallel.

    Every page's includes are expanded before anything runs, so a missing file or section
    fails at once. A failing block raises SnippetError naming the page, the block and the
    snippet it includes, with the traceback; pages not yet started are not started.
    `on_run(page, result)` is called for each page that ran, as soon as it has, while the
    others still run (the build writes the page's notebook then).
    """
    plans = []
    for page in pages:
        blocks = page_blocks(page)
        if blocks:
            plans.append((page, blocks, cache_key(blocks)))
    results: dict[str, PageResult] = {}
    stale = []
    for page, blocks, key in plans:
        cached = None if force else load_cached(blocks[0].page, key)
        if cached is None:
            stale.append((page, blocks, key))
        else:
            results[blocks[0].page] = PageResult(blocks[0].page, False, 0.0, cached)
    if not stale:
        return results
    jobs = jobs or max(1, min(len(stale), os.cpu_count() or 1))
    errors: list[str] = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(run_once, *plan, force): plan[0] for plan in stale}
        for future in concurrent.futures.as_completed(futures):
            if future.cancelled():  # not started, because another page failed first
                continue
            try:
                result = future.result()
                results[result.page] = result
                if on_run is not None and result.ran and not errors:
                    on_run(futures[future], result)
            except SnippetError as err:
                errors.append(str(err))
                for other in futures:
                    other.cancel()
    if errors:
        raise SnippetError("\n\n".join(errors))
    return results


def doc_pages() -> list[Path]:
    return sorted(
        p for p in DOCS.rglob("*.md") if not any(s.startswith(".") for s in p.parts)
    )


# ---------------------------------------------------------------------------------------------
# The child process: runs one page's blocks in order and reports what each printed.


def _exec_blocks(spec: Path, result: Path) -> int:
    import types
    import warnings

    from docs_build import render
    from docs_build.devices import use_compilation_cache

    # No devices are set up here: each page sets up its own, as a reader's fresh Python would.
    use_compilation_cache()
    # As in the tests: the pages teach today's API, so a deprecation stops the build.
    warnings.simplefilter("error", DeprecationWarning)
    warnings.simplefilter("error", PendingDeprecationWarning)
    import jax

    main = types.ModuleType("__main__")
    sys.modules["__main__"] = main
    outputs = []
    # A failure's traceback names blocks as the reader's Python does; the build says which
    # block of which page each one is.
    names: dict[str, str] = {}

    def as_built(text: str) -> str:
        return PYTHON_INPUT.sub(lambda m: names.get(m.group(0), m.group(0)), text)

    for data in json.loads(spec.read_text(encoding="utf-8")):
        block = Block(
            **{
                **data,
                "includes": tuple(data["includes"]),
                "draws": tuple(data["draws"]),
            }
        )
        filename = block.filename
        names[filename] = f"<{block.name}>"
        linecache.cache[filename] = (
            len(block.source),
            None,
            block.source.splitlines(True),
            filename,
        )
        try:
            with render.capture() as captured:
                exec(
                    compile(block.source, filename, "exec", dont_inherit=True),
                    main.__dict__,
                )
                jax.effects_barrier()
                for expression in block.draws:
                    captured.add(eval(expression, dict(render.DRAWINGS), main.__dict__))
        except BaseException as err:
            # Drop this runner's own frame: the traceback starts in the reader's code.
            tb = "".join(
                traceback.format_exception(type(err), err, err.__traceback__.tb_next)
            )
            message = f"Snippet failed: {block.name}\n{as_built(tb)}"
            result.write_text(json.dumps({"error": message}), encoding="utf-8")
            return 1
        outputs.append(
            [
                {"text": c}
                if isinstance(c, str)
                else {"html": c.html, "alt": c.text}
                if isinstance(c, render.Html)
                else {"svg": c.svg, "alt": c.text}
                for c in captured.chunks
            ]
        )
    result.write_text(json.dumps({"blocks": outputs}), encoding="utf-8")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "pages", nargs="*", type=Path, help="pages to run (default: all of docs/)"
    )
    parser.add_argument("--force", action="store_true", help="ignore the cache")
    parser.add_argument(
        "--versions",
        action="store_true",
        help="print the versions outputs are keyed on",
    )
    parser.add_argument(
        "--jobs", type=int, default=None, help="pages run at once (default: cores)"
    )
    parser.add_argument(
        "--exec",
        nargs=2,
        type=Path,
        metavar=("BLOCKS", "RESULT"),
        help=argparse.SUPPRESS,
    )
    parser.add_argument("--forker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.exec:
        return _exec_blocks(*args.exec)
    if args.forker:
        return _forker()
    if args.versions:
        print(" ".join(f"{name}=={version}" for name, version in versions().items()))
        return 0
    pages = [p.resolve() for p in args.pages] or doc_pages()
    start = time.perf_counter()
    try:
        results = ensure(pages, jobs=args.jobs, force=args.force)
    except SnippetError as err:
        print(err, file=sys.stderr)
        return 1
    ran = [r for r in results.values() if r.ran]
    for r in sorted(ran, key=lambda r: r.page):
        print(f"ran {r.page} in {r.seconds:.1f} s")
    print(
        f"snippet outputs: {len(results)} pages, {len(ran)} ran, "
        f"{len(results) - len(ran)} cached ({time.perf_counter() - start:.1f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
