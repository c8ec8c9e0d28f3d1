"""One strict build of the site per state of its sources, shared by the test sessions.

`nox -s tests` builds the site to test the pages; `nox -s browser` then drives Chromium over
the same site. The build is kept in `.cache/built-site` under a digest of everything it is
made from (the pages, the snippets, the build's own code, mkdocs.yml, the pins and the
installed versions the outputs are keyed on), so the second session reuses it instead of
building it again; any change to those sources builds it anew.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

from docs_build import outputs

ROOT = outputs.ROOT
FOLDER = ROOT / ".cache" / "built-site"
SOURCES = ("docs", "snippets", "docs_build")
FILES = ("mkdocs.yml", "pyproject.toml")
# Written by the build itself, from the sources above.
GENERATED = ("docs/notebooks",)


class BuildFailed(AssertionError):
    """`mkdocs build --strict` failed: its stderr says why."""


def digest() -> str:
    found = hashlib.sha256()
    paths = [ROOT / name for name in FILES]
    for folder in SOURCES:
        paths += (
            p
            for p in (ROOT / folder).rglob("*")
            if p.is_file()
            and "__pycache__" not in p.parts
            and not any(p.is_relative_to(ROOT / g) for g in GENERATED)
        )
    for path in sorted(paths):
        found.update(path.relative_to(ROOT).as_posix().encode() + b"\0")
        found.update(path.read_bytes())
    found.update(json.dumps(outputs.versions(), sort_keys=True).encode())
    found.update(f"python {platform.python_version()} isa {outputs.ISA}".encode())
    return found.hexdigest()


def mkdocs_build(root: Path, site: Path) -> subprocess.CompletedProcess:
    """`mkdocs build --strict` of the tree at `root` into `site`."""
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
        cwd=root,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=900,
    )


def built_site() -> Path:
    """The site, built strictly from this tree, once per state of its sources.

    Safe to call from several processes at once (pytest workers): the first to get the lock
    builds, the others wait and use its build.
    """
    FOLDER.parent.mkdir(parents=True, exist_ok=True)
    with open(FOLDER.parent / "built-site.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp = FOLDER / ".digest"
        wanted = digest()
        if stamp.is_file() and stamp.read_text() == wanted:
            return FOLDER
        proc = mkdocs_build(ROOT, FOLDER)
        if proc.returncode != 0:
            stamp.unlink(missing_ok=True)
            raise BuildFailed(proc.stderr)
        # The build rewrites docs/notebooks only where a page's code changed, which is in the
        # digest already: the sources are what they were when it started.
        stamp.write_text(wanted)
    return FOLDER
