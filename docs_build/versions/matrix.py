"""The version matrix: run the probes under every JAX release line, each in its own environment.

    python -m docs_build.versions.matrix [--since 0.4.38] [--jobs 2]

(`nox -s versions` runs it.) For every JAX minor release the registry serves from `--since`
on, it takes the latest patch, builds an environment with uv holding that jax and jaxlib and
the Flax and Optax releases that were current while it was (the resolver is told to ignore
anything uploaded after the next minor came out), runs `probes.py` there on 8 virtual CPU
devices and writes everything to `docs_build/versions/results.json`, which the build reads.

A release that cannot be installed here is recorded as "not installable here", with uv's
reason; nothing is ever filled in for it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RESULTS = HERE / "results.json"
PROBES = HERE / "probes.py"
ENVS = ROOT / ".cache" / "versions"
REGISTRY = os.environ.get("PYPI_JSON_URL", "https://pypi.org/pypi")
DEVICES = {
    # Every release reads XLA_FLAGS; newer ones also read JAX_NUM_CPU_DEVICES.
    "XLA_FLAGS": "--xla_force_host_platform_device_count=8",
    "JAX_NUM_CPU_DEVICES": "8",
    "JAX_PLATFORMS": "cpu",
}


def releases(package: str) -> list[dict]:
    """Final, unyanked releases of a package: version, first upload time, requires-python."""
    with urllib.request.urlopen(f"{REGISTRY}/{package}/json", timeout=60) as response:
        data = json.load(response)
    out = []
    for version, files in data["releases"].items():
        files = [f for f in files if not f.get("yanked")]
        try:
            parsed = Version(version)
        except InvalidVersion:
            continue
        if not files or parsed.is_prerelease or parsed.is_devrelease:
            continue
        out.append(
            {
                "version": version,
                "uploaded": min(f["upload_time_iso_8601"] for f in files),
                "requires_python": files[0].get("requires_python") or "",
            }
        )
    return sorted(out, key=lambda r: Version(r["version"]))


def release_lines(jax_releases: list[dict], since: str) -> list[dict]:
    """The latest patch of each minor line from `since` on, with the date to resolve at.

    The resolution date is when the next line began (or the release itself, if a patch came
    later): the Flax and Optax of that day were made for this JAX.
    """
    lines: dict[tuple[int, int], list[dict]] = {}
    for r in jax_releases:
        if Version(r["version"]) >= Version(since):
            lines.setdefault(Version(r["version"]).release[:2], []).append(r)
    keys = sorted(lines)
    chosen = []
    for i, key in enumerate(keys):
        latest = lines[key][-1]
        cutoff = None
        if i + 1 < len(keys):
            next_start = min(r["uploaded"] for r in lines[keys[i + 1]])
            cutoff = max(next_start, latest["uploaded"])
        chosen.append({**latest, "resolve_at": cutoff})
    return chosen


def installed_pythons() -> list[str]:
    """Python versions (X.Y) that start on this machine: pyenv leaves shims that do not."""
    found = []
    for minor in range(8, 20):
        exe = shutil.which(f"python3.{minor}")
        if exe and subprocess.run([exe, "-c", ""], capture_output=True).returncode == 0:
            found.append(f"3.{minor}")
    return found


def choose_python(
    requires: str, available: list[str], prefer: str = "3.12"
) -> str | None:
    """The interpreter for a release: `prefer` if it may, else the oldest one it accepts."""
    spec = SpecifierSet(requires or "")
    allowed = [v for v in available if spec.contains(f"{v}.0")]
    if prefer in allowed:
        return prefer
    return allowed[0] if allowed else None


def day_after(iso: str) -> str:
    moment = dt.datetime.fromisoformat(iso.replace("Z", "+00:00"))
    return (moment + dt.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")


def build_and_probe(line: dict, available: list[str]) -> dict:
    """Install one JAX line into its own environment and run the probes there."""
    jax_version = line["version"]
    row = {"jax": jax_version, "resolved_at": line["resolve_at"]}
    python = choose_python(line["requires_python"], available)
    if python is None:
        return {
            **row,
            "status": "not installable here",
            "reason": f"needs Python {line['requires_python']}; this machine has "
            f"{', '.join(available) or 'none'}",
        }
    env = ENVS / f"jax-{jax_version}"
    started = time.perf_counter()
    command = ["uv", "pip", "install", "--quiet", "--python", str(env / "bin/python")]
    if line["resolve_at"]:
        command += ["--exclude-newer", day_after(line["resolve_at"])]
    command += [f"jax=={jax_version}", f"jaxlib=={jax_version}", "flax", "optax"]
    steps = [
        [
            "uv",
            "venv",
            "--quiet",
            "--allow-existing",
            "--python",
            f"python{python}",
            str(env),
        ],
        command,
    ]
    for step in steps:
        done = subprocess.run(
            step,
            capture_output=True,
            text=True,
            env={**os.environ, "UV_COMPILE_BYTECODE": "1"},
        )
        if done.returncode:
            reason = (done.stderr or done.stdout).strip().splitlines()
            return {
                **row,
                "status": "not installable here",
                "reason": " ".join(reason[-3:]),
            }
    installed = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp, "probes.json")
        done = subprocess.run(
            [str(env / "bin/python"), str(PROBES), str(out)],
            capture_output=True,
            text=True,
            env={**os.environ, **DEVICES, "PYTHONWARNINGS": ""},
            cwd=tmp,  # nothing of this project on the path
            timeout=600,
        )
        if done.returncode or not out.exists():
            tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
            return {**row, "status": "probes failed", "reason": " ".join(tail)}
        probed = json.loads(out.read_text())
    return {
        **row,
        "status": "probed",
        "python": probed["python"],
        "packages": probed["packages"],
        "seconds": {
            "install": round(installed, 1),
            "probes": round(time.perf_counter() - started - installed, 1),
        },
        "results": probed["results"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--since", default="0.4.38", help="the oldest JAX line to probe"
    )
    parser.add_argument(
        "--jobs", type=int, default=2, help="environments built at once"
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    lines = release_lines(releases("jax"), args.since)
    available = installed_pythons()
    print(f"JAX lines: {', '.join(line['version'] for line in lines)}", flush=True)
    print(f"Pythons here: {', '.join(available)}", flush=True)

    def one(line):
        row = build_and_probe(line, available)
        print(
            f"  jax {row['jax']}: {row['status']} {row.get('packages', row.get('reason', ''))}",
            flush=True,
        )
        return row

    with ThreadPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(one, lines))
    result = {
        "generated": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d"),
        "seconds": round(time.perf_counter() - started),
        "versions": rows,
    }
    args.out.write_text(
        json.dumps(result, indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    probed = sum(r["status"] == "probed" for r in rows)
    print(
        f"{probed} of {len(rows)} JAX lines probed in {result['seconds']} s -> {args.out}"
    )
    return 0 if probed else 1


if __name__ == "__main__":
    sys.exit(main())
