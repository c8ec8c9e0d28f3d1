"""Time the docs build the way a contributor meets it, and print the figures.

    nox -s bench                 # or: python tests/bench_build.py [--repeat 5]

In a fresh copy of the tree (so the working tree and its caches are left alone) it times:
  0. creating the docs environment (reported, not compared);
  1. the execute-once floor: every page's program run once (`python -m docs_build.outputs`),
     with no caches at all (no outputs, no compiled programs);
  2. a cold build: `mkdocs build --strict` with no caches at all, which runs every page, writes
     the notebooks with their outputs and renders the site;
  3. warm `nox -s docs` with nothing changed (median of --repeat runs);
  4. `nox -s docs` after editing one section of one snippet (median of --repeat edits);
  5. a plain `mkdocs build --strict` of the same tree, outputs present (median of --repeat).
Targets: (2) at most 1.2 x (1); (3) under 1.5 x (5); (4) at most 10 s more than (3). Not a
test: it prints, and exits non-zero only if a build fails.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COPIED = (
    "docs",
    "docs_build",
    "snippets",
    "mkdocs.yml",
    "pyproject.toml",
    "noxfile.py",
    "README.md",
)
# The section edited in step 3: a printed label on the first guide page.
EDITED = ROOT / "snippets" / "basics" / "devices_and_meshes" / "make_mesh.py"
EDIT_FROM = 'print("shape:", dict(mesh.shape))'


def timed(cmd: list[str], cwd: Path) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(
        cmd,
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed in {cwd}:\n{proc.stdout}\n{proc.stderr}")
    return seconds, proc.stdout + proc.stderr


def ran_pages(log: str) -> str:
    line = next((ln for ln in log.splitlines() if "snippet outputs:" in ln), "")
    return line.split("snippet outputs:", 1)[-1].strip()


def main() -> int:
    parser = argparse.ArgumentParser(
        description="Time cold, warm and edited docs builds."
    )
    parser.add_argument(
        "--repeat", type=int, default=5, help="runs per warm figure (median)"
    )
    args = parser.parse_args()
    nox = shutil.which("nox")
    if nox is None:
        sys.exit("nox is not on PATH: pip install nox uv")
    if EDIT_FROM not in EDITED.read_text(encoding="utf-8"):
        sys.exit(f"{EDITED}: the line this benchmark edits is gone; update EDIT_FROM")

    with tempfile.TemporaryDirectory(prefix="bench-docs-") as tmp:
        tree = Path(tmp)
        for name in COPIED:
            src = ROOT / name
            if src.is_dir():
                shutil.copytree(
                    src, tree / name, ignore=shutil.ignore_patterns("__pycache__")
                )
            else:
                shutil.copy2(src, tree / name)
        docs = [nox, "-s", "docs"]
        edited = tree / EDITED.relative_to(ROOT)
        original = edited.read_text(encoding="utf-8")

        setup, _ = timed([*docs, "--install-only"], tree)
        print(f"docs environment created:               {setup:6.1f} s")
        python = str(tree / ".nox" / "docs" / "bin" / "python")
        floor, _ = timed([python, "-m", "docs_build.outputs"], tree)
        print(f"execute-once floor (pages run, cold):   {floor:6.1f} s")
        shutil.rmtree(tree / ".cache")
        plain_cmd = [
            str(tree / ".nox" / "docs" / "bin" / "mkdocs"),
            "build",
            "--strict",
        ]
        cold, log = timed(plain_cmd, tree)
        print(
            f"cold mkdocs build (no caches at all):   {cold:6.1f} s   [{ran_pages(log)[:40]}...]"
        )

        warm = [timed(docs, tree)[0] for _ in range(args.repeat)]
        plain = [timed(plain_cmd, tree)[0] for _ in range(args.repeat)]

        changed, logs = [], []
        for i in range(args.repeat):
            label = f'print("shape (edit {i}):", dict(mesh.shape))'
            edited.write_text(original.replace(EDIT_FROM, label), encoding="utf-8")
            seconds, log = timed(docs, tree)
            changed.append(seconds)
            logs.append(ran_pages(log))
        edited.write_text(original, encoding="utf-8")

    w, p, c = (statistics.median(v) for v in (warm, plain, changed))
    print(
        f"warm nox -s docs, nothing changed:      {w:6.2f} s   (median of {len(warm)})"
    )
    print(f"warm nox -s docs, one snippet edited:   {c:6.2f} s   [{logs[-1]}]")
    print(
        f"plain mkdocs build --strict:            {p:6.2f} s   (median of {len(plain)})"
    )
    print()
    print(f"cold / floor = {cold / floor:.2f}   (target <= 1.2)")
    print(f"warm / plain = {w / p:.2f}   (target < 1.5)")
    print(f"edited - warm = {c - w:+.2f} s  (target < 10 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
