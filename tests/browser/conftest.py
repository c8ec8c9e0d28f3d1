"""A built site served on 127.0.0.1 and Debian's Chromium driven by Playwright.

Nothing here downloads a browser: Playwright is pointed at an installed Chromium
(/usr/bin/chromium, or $CHROMIUM). Without one, every browser test is skipped with the
package to install.
"""

import functools
import http.server
import os
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
# The flags a closed network needs: without them Chromium keeps reaching for Google's hosts.
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-default-apps",
]
ARTIFACTS = Path(
    os.environ.get("BROWSER_ARTIFACTS", ROOT / ".cache" / "browser-artifacts")
)


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(folder: Path):
    """Serve `folder` on a free port of 127.0.0.1 in a background thread."""
    handler = functools.partial(QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def pytest_sessionfinish(session):
    """Merge the axe counts each process wrote (axe.<worker>.json) into axe.txt."""
    if hasattr(session.config, "workerinput"):  # a worker: the controller merges
        return
    import json

    parts = sorted(ARTIFACTS.glob("axe.*.json"))
    if not parts:
        return
    impacts = ("critical", "serious", "moderate", "minor")
    rows = [
        row for part in parts for row in json.loads(part.read_text(encoding="utf-8"))
    ]
    lines = [f"{'page':48}{'scheme':>8}" + "".join(f"{i:>10}" for i in impacts)]
    for page, scheme, counts in sorted(rows, key=lambda r: (r[0], r[1])):
        lines.append(
            f"{page or '(home)':48}{scheme:>8}"
            + "".join(f"{counts.get(i, 0):>10}" for i in impacts)
        )
    (ARTIFACTS / "axe.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for part in parts:
        part.unlink()


@pytest.fixture(scope="session")
def site() -> Path:
    """The site, built strictly from this tree (page outputs come from the warm cache).

    Built once per state of its sources, and only if `nox -s tests` has not built the same
    already (docs_build/built_site.py); with several workers, the first builds, the others
    wait for it and serve the same folder.
    """
    from docs_build.built_site import built_site

    return built_site()


@pytest.fixture(scope="session")
def base_url(site):
    server = serve(site)
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


@pytest.fixture(scope="session")
def browser():
    if not CHROMIUM.exists():
        pytest.skip(
            f"Chromium not found at {CHROMIUM}: install Debian's `chromium` package "
            "(apt-get install chromium), or set CHROMIUM to a Chromium or Chrome binary."
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS
        )
        yield launched
        launched.close()


@pytest.fixture
def context(browser, base_url):
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    ctx.grant_permissions(
        ["clipboard-read", "clipboard-write"], origin=base_url.rstrip("/")
    )
    yield ctx
    ctx.close()


@pytest.fixture(scope="session")
def axe_script() -> Path:
    """axe-core from the npm registry, installed by `nox -s browser` into .cache/npm."""
    path = ROOT / ".cache" / "npm" / "node_modules" / "axe-core" / "axe.min.js"
    if not path.exists():
        pytest.skip(f"axe-core is not installed at {path}: run `nox -s browser`.")
    return path


# The grids a page's script is held to: every 7th case on every push (a different sample of
# each kind of case, as the grids are drawn at random), every case once a day (`daily`).
EVERY = [
    pytest.param(7, id="every-7th"),
    pytest.param(1, id="all", marks=pytest.mark.daily),
]
