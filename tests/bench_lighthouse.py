"""Lighthouse scores of representative pages and the heaviest ones, in Debian's Chromium.
Prints, not a test.

    nox -s lighthouse              # or: python tests/bench_lighthouse.py [--preset desktop]

Builds the site, serves it on 127.0.0.1 with gzip (as GitHub Pages serves it), and runs
Lighthouse (npm, installed by the nox session into .cache/npm) on the home page, a guide
page with diagrams, its notebook page, the sharding explorer (the site's largest script) and
the error index, and the heaviest guide page and notebook page of the
build (by bytes of HTML), with the mobile (default) and desktop presets, each --runs times
(default 3; scores vary from run to run, the median is printed). Target: at least 95 in each
category.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import http.server
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIGHTHOUSE = ROOT / ".cache" / "npm" / "node_modules" / ".bin" / "lighthouse"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
PAGES = {
    "home": "",
    "guide page (diagrams)": "basics/named-sharding/",
    "notebook page": "notebooks/basics/named-sharding/",
    "explorer (script)": "tools/sharding-explorer/",
    "error index": "guides/error-index/",
}
CATEGORIES = ("performance", "accessibility", "best-practices", "seo")
COMPRESSED = {".html", ".css", ".js", ".json", ".svg", ".xml", ".txt"}


class GzipHandler(http.server.SimpleHTTPRequestHandler):
    """Static files, gzip-compressed for clients that accept it."""

    def log_message(self, *args):
        pass

    def send_head(self):
        path = Path(self.translate_path(self.path))
        if path.is_dir():
            path = path / "index.html"
        if (
            path.suffix not in COMPRESSED
            or "gzip" not in self.headers.get("Accept-Encoding", "")
            or not path.is_file()
        ):
            return super().send_head()
        body = gzip.compress(path.read_bytes())
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return _Body(body)


class _Body:
    def __init__(self, data: bytes):
        self.data = data

    def read(self, *args):
        data, self.data = self.data, b""
        return data

    def close(self):
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description="Lighthouse scores of seven pages.")
    parser.add_argument(
        "--preset", choices=["mobile", "desktop", "both"], default="both"
    )
    parser.add_argument(
        "--runs",
        type=int,
        default=3,
        help="runs per page and preset; the median is printed (default 3)",
    )
    args = parser.parse_args()
    if args.runs < 1:
        parser.error(f"--runs must be at least 1, not {args.runs}")
    if not LIGHTHOUSE.exists():
        sys.exit(f"{LIGHTHOUSE} not found: run `nox -s lighthouse`, which installs it.")
    if not Path(CHROMIUM).exists():
        sys.exit(
            f"Chromium not found at {CHROMIUM}: apt-get install chromium, or set CHROMIUM."
        )
    presets = ["mobile", "desktop"] if args.preset == "both" else [args.preset]
    with tempfile.TemporaryDirectory(prefix="lighthouse-") as tmp:
        site = Path(tmp, "site")
        subprocess.run(
            [
                sys.executable,
                "-m",
                "mkdocs",
                "build",
                "--strict",
                "-q",
                "-d",
                str(site),
            ],
            cwd=ROOT,
            check=True,
        )
        pages = {**PAGES, **heaviest(site)}
        handler = functools.partial(GzipHandler, directory=str(site))
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{server.server_address[1]}/"
        for label, path in pages.items():
            print(f"{label}: /{path}")
        print(f"\nmedian of {args.runs} run(s); performance range in brackets\n")
        print(f"{'page':<30}{'preset':<9}" + "".join(f"{c:>16}" for c in CATEGORIES))
        worst = 100
        for label, path in pages.items():
            for preset in presets:
                runs = sorted(
                    (run(base + path, preset, Path(tmp)) for _ in range(args.runs)),
                    key=lambda r: r[0]["performance"],
                )
                scores = {
                    c: statistics.median_low(r[0][c] for r in runs) for c in CATEGORIES
                }
                failing = runs[(len(runs) - 1) // 2][1]  # of the median run
                worst = min(worst, *scores.values())
                spread = f"[{runs[0][0]['performance']}-{runs[-1][0]['performance']}]"
                row = "".join(f"{scores[c]:>16}" for c in CATEGORIES)
                print(f"{label:<30}{preset:<9}{row}  {spread if len(runs) > 1 else ''}")
                for audit in failing:
                    print(f"{'':<39}below 1: {audit}")
        server.shutdown()
    print(f"\nlowest median score: {worst} (target >= 95)")
    return 0


def heaviest(site: Path) -> dict[str, str]:
    """The largest guide page and the largest notebook page of a built site, with sizes."""
    found = {}
    for kind, pages in (
        ("guide", [p for p in site.rglob("index.html") if "notebooks" not in p.parts]),
        ("notebook", list((site / "notebooks").rglob("index.html"))),
    ):
        page = max(pages, key=lambda p: p.stat().st_size)
        kb = page.stat().st_size / 1000
        found[f"heaviest {kind} ({kb:.0f} KB)"] = (
            page.parent.relative_to(site).as_posix() + "/"
        )
    return found


def run(url: str, preset: str, tmp: Path) -> tuple[dict[str, int], list[str]]:
    report = tmp / "report.json"
    flags = "--headless=new --no-sandbox --disable-gpu --disable-background-networking"
    cmd = [
        str(LIGHTHOUSE),
        url,
        "--quiet",
        "--output=json",
        f"--output-path={report}",
        f"--only-categories={','.join(CATEGORIES)}",
        f"--chrome-flags={flags} --disable-component-update --disable-sync --no-first-run",
    ]
    if preset == "desktop":
        cmd.append("--preset=desktop")
    subprocess.run(cmd, check=True, env={**os.environ, "CHROME_PATH": CHROMIUM})
    data = json.loads(report.read_text(encoding="utf-8"))
    scores = {c: round(data["categories"][c]["score"] * 100) for c in CATEGORIES}
    failing = [
        f"{ref['id']} ({data['audits'][ref['id']].get('displayValue') or 'fails'})"
        for c in CATEGORIES
        for ref in data["categories"][c]["auditRefs"]
        if ref.get("weight")
        and data["audits"][ref["id"]].get("score") not in (None, 1)
        and data["audits"][ref["id"]]["score"] < 0.9
    ]
    return scores, failing


if __name__ == "__main__":
    sys.exit(main())
