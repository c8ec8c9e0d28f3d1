"""What every compiled-program file stores the same way: memory and cost analyses, package
versions and pins, and the one-record-per-line JSON.

Used by the driver (results/<family>.json), the planner's grid and the explorer's reshard
grid. Kept apart from the driver so that a new program in the driver does not make those
grids stale: each lists this file, not the driver, among the inputs it was made from.
"""

from __future__ import annotations

import importlib.metadata
import json
import platform
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


MEMORY_FIELDS = {
    "argument_bytes": "argument_size_in_bytes",
    "output_bytes": "output_size_in_bytes",
    "alias_bytes": "alias_size_in_bytes",
    "temp_bytes": "temp_size_in_bytes",
    "peak_bytes": "peak_memory_in_bytes",
    "generated_code_bytes": "generated_code_size_in_bytes",
}
COST_FIELDS = {
    "flops": "flops",
    "bytes_accessed": "bytes accessed",
    "optimal_seconds": "optimal_seconds",
}


def memory(compiled) -> dict[str, int | None]:
    stats = compiled.memory_analysis()
    return {
        key: (int(getattr(stats, name)) if hasattr(stats, name) else None)
        for key, name in MEMORY_FIELDS.items()
    }


def cost(compiled) -> dict[str, float | None]:
    analysis = compiled.cost_analysis()
    if isinstance(analysis, list):  # older jax: one dict per program
        analysis = analysis[0] if analysis else {}
    analysis = analysis or {}
    found = {key: analysis.get(name) for key, name in COST_FIELDS.items()}
    if found["optimal_seconds"] is not None and found["optimal_seconds"] < 0:
        found["optimal_seconds"] = None  # XLA's way of saying it has no estimate
    return found


PACKAGES = {
    "cpu": ("jax", "jaxlib", "flax", "optax"),
    "tpu": ("jax", "jaxlib", "libtpu", "flax", "optax"),
    "gpu": ("jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda12-pjrt", "flax", "optax"),
}


def versions(family: str = "tpu") -> dict[str, str | None]:
    found = {"python": platform.python_version()}
    for name in PACKAGES[family]:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    return found


# The pyproject dependency group each family's environment is built from.
GROUPS = {"cpu": "examples", "tpu": "tpu", "gpu": "gpu"}


def pins(family: str) -> dict[str, str]:
    """Package -> pinned version of the family's dependency group (and those it includes)."""
    import tomllib

    groups = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))[
        "dependency-groups"
    ]
    found: dict[str, str] = {}

    def add(name: str) -> None:
        for item in groups[name]:
            if isinstance(item, dict):
                add(item["include-group"])
            elif "==" in item:
                package, version = item.split("==")
                found[re.sub(r"\[.*\]", "", package).strip()] = version.strip()

    add(GROUPS[family])
    return found


def require(family: str) -> None:
    """Stop, naming the package and version, when this environment lacks a pinned one."""
    for package, version in pins(family).items():
        try:
            have = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            have = None
        if have != version:
            raise SystemExit(
                f"the {family} family needs {package}=={version}, and this environment has "
                f"{'none' if have is None else have}: `nox -s {'tpu' if family != 'gpu' else 'gpu'}` "
                "builds the environment from pyproject.toml's dependency groups"
            )


def _flat(value) -> bool:
    """Scalars, and lists and objects of scalars or of lists of scalars."""
    if isinstance(value, dict):
        return all(_flat(v) and not isinstance(v, dict) for v in value.values())
    if isinstance(value, list):
        return all(not isinstance(v, (dict, list)) for v in value)
    return True


def dump(value, indent: str = "") -> str:
    """The results as JSON, each flat object (a collective's record, a memory report) on
    one line, so that the file stays small and a change to one record is a one-line diff."""
    if _flat(value):
        return json.dumps(value, separators=(", ", ": "))
    inner = indent + " "
    if isinstance(value, dict):
        items = [f"{inner}{json.dumps(k)}: {dump(v, inner)}" for k, v in value.items()]
        body, ends = ",\n".join(items), "{}"
    else:
        body, ends = ",\n".join(inner + dump(v, inner) for v in value), "[]"
    return f"{ends[0]}\n{body}\n{indent}{ends[1]}" + ("" if indent else "\n")
