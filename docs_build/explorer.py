"""The sharding explorer's grid: cases whose answers JAX gives, for the page's script to match.

The explorer (docs/javascripts/sharding-explorer.js) computes in the browser where each block
of an array lives, its bytes, and JAX's error text for a spec that cannot place the array.
This module picks a grid of cases (`cases`), asks JAX for each answer through the page's own
`snippets.tools.sharding_explorer.layout` on up to 256 virtual CPU devices (`expected`: a
separate process, cached under .cache/explorer), and renders a few as the page's static table
of examples (`examples_table`), which is what a reader without the script sees. The browser
tests drive the page through every case and compare (tests/browser/test_explorer.py).

Run `python -m docs_build.explorer` to print how many cases there are and a few answers.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import math
import random
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
LAYOUT = ROOT / "snippets" / "tools" / "sharding_explorer" / "layout.py"
CACHE = ROOT / ".cache" / "explorer"
DEVICES = 256  # the largest mesh the explorer offers
MINIMUM_CASES = 200
MARKER = "<!-- explorer: examples -->"
COUNT = "<!-- explorer: count -->"
# The moves from one spec to another (docs_build/reshard_grid.py compiles them).
SCRIPT = ROOT / "docs" / "javascripts" / "sharding-explorer.js"
MOVES_GRID = HERE / "reshard_grid.json"
MOVES = "<!-- explorer: moves -->"
MOVES_CHECKED = "<!-- explorer: moves-checked -->"
# The published link rates the script turns a move's bytes into a lower bound on its time
# with: costmodel.LINKS's, the planner's, for the chips whose compiler planned the moves
# (the TPU rules were held to v5e and v5p, the GPU's to an H100 node).
LINKS = "<!-- explorer: links -->"
RATE_CHIPS = {"tpu": ("v5e", "v5p"), "gpu": ("h100",)}
GPU_NODE = 8  # GPUs one NVLink node joins (a DGX H100: the grid's h100:1x8)
# The page's static table of moves: every case of one mesh and shape, as compiled.
MOVES_EXAMPLE = ([2, 4], [64, 32])

# Meshes a reader is likely to try: 1 to 3 axes, 3 to 256 devices, sizes that are not powers
# of two among them.
MESHES = [
    ((8,), ("x",)),
    ((3,), ("x",)),
    ((16,), ("devices",)),
    ((2, 4), ("x", "y")),
    ((4, 2), ("data", "model")),
    ((2, 3), ("x", "y")),
    ((1, 8), ("x", "y")),
    ((4, 4), ("x", "y")),
    ((2, 8), ("data", "model")),
    ((16, 16), ("x", "y")),
    ((2, 2, 2), ("x", "y", "z")),
    ((2, 2, 4), ("data", "fsdp", "tensor")),
    ((4, 4, 4), ("x", "y", "z")),
    ((8, 4, 8), ("data", "fsdp", "tensor")),
]
SHAPES = [
    (8,),
    (12,),
    (256,),
    (6, 4),
    (16, 8),
    (32, 64),
    (256, 12),
    (8, 6, 4),
    (16, 16, 16),
    (12, 8, 32),
    (4, 8, 2, 6),
    (64, 32, 8, 2),
    (16, 16, 16, 16),
]
DTYPES = ("float32", "bfloat16", "int8")


def spec_choices(names: tuple[str, ...]) -> list[tuple[str, ...] | None]:
    """What one dimension of a spec may hold in the explorer: nothing, an axis, or an
    ordered tuple of axes (the page's menus offer exactly these)."""
    found: list[tuple[str, ...] | None] = [None]
    for k in range(1, len(names) + 1):
        found += list(itertools.permutations(names, k))
    return found


def _distinct_axes(rng: random.Random, names, ndim: int) -> tuple:
    """A spec that uses each axis at most once (it may still not divide the shape)."""
    left, spec = list(names), []
    for _ in range(ndim):
        options = [c for c in spec_choices(tuple(left)) if c is None or len(c) <= 2]
        pick = rng.choice(options)
        spec.append(pick)
        left = [a for a in left if pick is None or a not in pick]
    return tuple(spec)


def cases() -> list[dict]:
    """The grid: every mesh with every shape, and for each the replicated spec, two specs
    that use each axis at most once and one drawn freely, with a fixed seed (so an axis used
    twice and sizes that do not divide come up too)."""
    rng = random.Random(0)
    found = []
    for (mesh_shape, names), shape in itertools.product(MESHES, SHAPES):
        picked = [tuple([None] * len(shape))]  # replicated: always
        for draw in range(12):
            if len(picked) == 4:
                break
            spec = (
                _distinct_axes(rng, names, len(shape))
                if draw % 4 < 3
                else tuple(rng.choice(spec_choices(names)) for _ in shape)
            )
            if spec not in picked:
                picked.append(spec)
        for spec in picked:
            found.append(
                {
                    "shape": list(shape),
                    "mesh": list(mesh_shape),
                    "names": list(names),
                    "spec": [list(e) if e else None for e in spec],
                    "dtype": rng.choice(DTYPES),
                }
            )
    return found


def _key(grid: list[dict]) -> str:
    from docs_build import outputs

    digest = hashlib.sha256()
    digest.update(LAYOUT.read_bytes())
    digest.update(Path(__file__).read_bytes())
    digest.update(json.dumps(grid).encode())
    digest.update(json.dumps(outputs.versions(), sort_keys=True).encode())
    return digest.hexdigest()[:20]


def expected(grid: list[dict] | None = None) -> list[dict]:
    """JAX's answer for each case (cached: computed again when the grid, the layout code or
    a pinned version changes)."""
    grid = cases() if grid is None else grid
    path = CACHE / f"{_key(grid)}.json"
    if path.exists():
        return json.loads(path.read_text(encoding="utf-8"))
    proc = subprocess.run(
        [sys.executable, "-m", "docs_build.explorer", "--answer"],
        input=json.dumps(grid),
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if proc.returncode:
        raise RuntimeError(
            f"JAX could not answer the explorer's grid (docs_build/explorer.py):\n"
            f"{proc.stderr[-4000:]}"
        )
    answers = json.loads(proc.stdout)
    CACHE.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(answers), encoding="utf-8")
    return answers


def _answer(grid: list[dict]) -> list[dict]:
    """In a process of its own, with DEVICES virtual CPU devices."""
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(DEVICES)
    from snippets.tools.sharding_explorer.layout import layout

    return [
        layout(
            tuple(c["shape"]),
            tuple(c["mesh"]),
            tuple(c["names"]),
            spec_entries(c["spec"]),
            c["dtype"],
        )
        for c in grid
    ]


def spec_entries(spec: list) -> tuple:
    """A case's spec (each entry None or a list of axis names) as PartitionSpec's entries:
    [None, ['x'], ['x', 'y']] -> (None, 'x', ('x', 'y'))."""
    return tuple(None if not e else e[0] if len(e) == 1 else tuple(e) for e in spec)


def spec_text(spec: list) -> str:
    """A case's spec as Python writes it: P('x', None), P(('x', 'y'),)."""
    parts = [
        "None" if e is None else repr(e[0]) if len(e) == 1 else repr(tuple(e))
        for e in spec
    ]
    return "P(" + (parts[0] + "," if len(parts) == 1 else ", ".join(parts)) + ")"


def mesh_text(case: dict) -> str:
    return ", ".join(
        f"{a}: {n}" for n, a in zip(case["mesh"], case["names"], strict=True)
    )


# The cases the page's static table shows: one of each kind a reader meets.
EXAMPLES = (
    ((8,), ("x",), (16, 8), [["x"], None], "float32"),
    ((2, 4), ("x", "y"), (16, 8), [["x"], ["y"]], "float32"),
    ((2, 4), ("x", "y"), (16, 8), [["x", "y"], None], "bfloat16"),
    ((2, 4), ("x", "y"), (16, 8), [["y"], None], "float32"),
    ((2, 2, 2), ("x", "y", "z"), (8, 6, 4), [["x"], None, ["z"]], "float32"),
    ((2, 4), ("x", "y"), (6, 4), [["y"], None], "float32"),
    ((2, 4), ("x", "y"), (16, 8), [["x"], ["x"]], "float32"),
)


def example_cases() -> list[dict]:
    return [
        {"shape": list(s), "mesh": list(m), "names": list(n), "spec": spec, "dtype": d}
        for m, n, s, spec, d in EXAMPLES
    ]


def examples_table() -> str:
    grid = example_cases()
    lines = [
        "| array | mesh | spec | each device holds | bytes per device |",
        "|---|---|---|---|---|",
    ]
    for case, found in zip(grid, expected(grid), strict=True):
        array = f"{case['dtype']}{tuple(case['shape'])}".replace(",)", ")")
        if "error" in found:
            held = f"`{found['error'].split(':')[0]}`"
            size = "\u2014"
        else:
            copies = len(found["blocks"]) // len(
                {json.dumps(b) for b in found["blocks"]}
            )
            held = f"a block of {tuple(found['block'])}".replace(",)", ")")
            held += f", on {copies} devices each" if copies > 1 else ", its own"
            size = f"{found['bytes']:,}"
        lines.append(
            f"| {array} | {mesh_text(case)} | `{spec_text(case['spec'])}` | {held} | {size} |"
        )
    return "\n".join(lines)


@functools.cache
def moves_grid() -> dict:
    return json.loads(MOVES_GRID.read_text(encoding="utf-8"))


def moves() -> list[dict]:
    """Each compiled move of the grid: its case, the target it was compiled for, the
    backend the explorer calls it ("cpu", "tpu" or "gpu": the target's family) and JAX's
    plan. A case whose compile aborted has none."""
    from docs_build.compiled.targets import family

    return [
        {
            "case": case,
            "target": target,
            "backend": family(target),
            "plan": plan,
        }
        for case in moves_grid()["cases"]
        for target, plan in case.get("plans", {}).items()
    ]


def move_job(move: dict) -> dict:
    """What the page's script is asked for a move, by the build (under Node) and by the
    browser tests (through the form): the case, both specs and the backend."""
    case = move["case"]
    return {
        **{k: case[k] for k in ("shape", "mesh", "names", "dtype")},
        "source": case["source"],
        "target": case["target"],
        "backend": move["backend"],
    }


class ScriptDisagrees(RuntimeError):
    """The explorer's script names a plan for a move that is not the compiled one."""


# Loads the page's script under Node and answers each move it reads from stdin.
NODE_RUNNER = """
const api = require(process.env.EXPLORER_SCRIPT);
let text = "";
process.stdin.on("data", (chunk) => { text += chunk; });
process.stdin.on("end", () => {
  const out = JSON.parse(text).map((m) => api.reshard(
    {shape: m.shape, mesh: m.mesh, names: m.names, dtype: m.dtype, spec: m.source},
    m.target, m.backend));
  process.stdout.write(JSON.stringify(out));
});
"""


# Calls one function of the page's script (EXPLORER_CALL) with each list of arguments read.
NODE_CALL = """
const api = require(process.env.EXPLORER_SCRIPT);
let text = "";
process.stdin.on("data", (chunk) => { text += chunk; });
process.stdin.on("end", () => {
  const call = api[process.env.EXPLORER_CALL];
  process.stdout.write(JSON.stringify(JSON.parse(text).map((args) => call(...args))));
});
"""


def _node(runner: str, payload: list, **env: str) -> list:
    """Run `runner` with the page's script under Node, `payload` on stdin, JSON back."""
    import os
    import shutil

    node = shutil.which("node")
    if node is None:
        raise RuntimeError(
            "The sharding explorer's page checks its script against the compiled moves "
            "with Node.js, which is not on the PATH: install Node.js 18 or newer."
        )
    proc = subprocess.run(
        [node, "-e", runner],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env={**os.environ, "EXPLORER_SCRIPT": str(SCRIPT), **env},
    )
    if proc.returncode:
        raise RuntimeError(
            f"{SCRIPT.relative_to(ROOT)} failed under Node:\n{proc.stderr}"
        )
    return json.loads(proc.stdout)


def script_answers(jobs: list[dict]) -> list[dict]:
    """The page's own `reshard` for each job, run by Node: {steps}, {steps: None, why} or
    {error}."""
    return _node(NODE_RUNNER, jobs)


def script_call(name: str, calls: list[list]) -> list:
    """The page's script's function `name` (sizeText, timeText, moveSeconds, moveProgram)
    for each list of arguments, run by Node."""
    return _node(NODE_CALL, calls, EXPLORER_CALL=name)


def move_case(job: dict) -> dict:
    """A move's job as the script's case (its source as the spec), for `moveProgram`."""
    return {
        **{k: job[k] for k in ("shape", "mesh", "names", "dtype")},
        "spec": job["source"],
    }


def same_plan(named: list[dict], compiled: list[dict]) -> bool:
    keys = ("kind", "group", "groups")
    return len(named) == len(compiled) and all(
        all(a[k] == b[k] for k in keys) and abs(a["wire"] - b["wire"]) < 1e-9
        for a, b in zip(named, compiled, strict=True)
    )


def moves_report() -> dict:
    """Every compiled move answered by the page's script: how many it names, per target,
    and each disagreement (there must be none: `check_moves` raises)."""
    found = moves()
    report = {"targets": {}, "disagreements": [], "unmodelled": []}
    answers = script_answers([move_job(m) for m in found])
    for move, answer in zip(found, answers, strict=True):
        counts = report["targets"].setdefault(
            move["target"], {"programs": 0, "named": 0}
        )
        counts["programs"] += 1
        if answer.get("steps") is None:
            report["unmodelled"].append(move)
        elif same_plan(answer["steps"], move["plan"]):
            counts["named"] += 1
        else:
            report["disagreements"].append({**move, "script": answer})
    return report


def check_moves() -> dict:
    report = moves_report()
    if report["disagreements"]:
        first = report["disagreements"][0]
        raise ScriptDisagrees(
            f"The explorer's script ({SCRIPT.relative_to(ROOT)}) names a plan JAX did not "
            f"compile for {len(report['disagreements'])} moves; the first, for "
            f"{first['target']}: {json.dumps(first['case'])}\n"
            f"  script: {json.dumps(first['script'])}\n  JAX:    {json.dumps(first['plan'])}"
        )
    return report


def plan_text(plan: list[dict]) -> str:
    """A compiled plan in a table cell: 'all-gather over 4 (2 groups), 384 B; ...'."""
    if not plan:
        return "nothing sent"
    parts = []
    for step in plan:
        over = (
            f"{step['groups']} pairs"
            if step["group"] is None
            else f"over {step['group']}"
            + (f" ({step['groups']} groups)" if step["groups"] > 1 else "")
        )
        parts.append(f"{step['kind']} {over}, {step['wire']:,.0f} B")
    return "; ".join(parts)


def moves_table() -> str:
    mesh, shape = MOVES_EXAMPLE
    rows = [
        m for m in moves() if m["case"]["mesh"] == mesh and m["case"]["shape"] == shape
    ]
    by_case: dict[str, dict] = {}
    for m in rows:
        key = json.dumps([m["case"]["source"], m["case"]["target"]])
        by_case.setdefault(key, {"case": m["case"]})[m["target"]] = m["plan"]
    lines = [
        "| dtype | from | to | CPU: collectives, bytes sent per device | "
        "TPU v5e:2x4: the same | H100 (h100:1x8): the same |",
        "|---|---|---|---|---|---|",
    ]
    for entry in by_case.values():
        case = entry["case"]
        lines.append(
            f"| {case['dtype']} | `{spec_text(case['source'])}` | "
            f"`{spec_text(case['target'])}` | {plan_text(entry['cpu'])} | "
            f"{plan_text(entry['v5e:2x4'])} | {plan_text(entry['h100:1x8'])} |"
        )
    return "\n".join(lines)


def _and(items: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return ", ".join(items[:-1]) + " and " + items[-1] if len(items) > 1 else items[0]


def moves_checked() -> str:
    """The page's account of the check, from the grid and the script's answers."""
    report = check_moves()
    grid = moves_grid()["cases"]
    targets = report["targets"]
    cpu = targets["cpu"]
    others = {k: v for k, v in targets.items() if k != "cpu"}
    crashed = [c for c in grid if "crash" in c]
    meshes = {json.dumps(c["mesh"]) for c in grid}
    sizes = sorted({math.prod(c["mesh"]) for c in grid})
    text = (
        f"The build compiled {sum(t['programs'] for t in targets.values()):,} such moves: "
        f"{len(grid):,} pairs of specs on {len(meshes)} meshes of {sizes[0]} to "
        f"{sizes[-1]} devices, each for the CPU backend, and those on 8 devices for "
        + _and(list(others))
        + " too. The script names JAX's plan for "
        f"{cpu['named']:,} of the {cpu['programs']:,} CPU programs and "
        + _and(
            [
                f"{v['named']:,} of the {v['programs']:,} for {k}"
                for k, v in others.items()
            ]
        )
        + ", and every plan it names is the compiled one, collective by collective and "
        "byte for byte; for the other moves it says that it does not know."
    )
    if crashed:
        check = crashed[0]["crash"]
        text += (
            f" {len(crashed)} of the pairs made the compiler abort the process "
            f"(`{check}`), so they have no plan to compare."
        )
    return text


def link_rates() -> dict:
    """For each backend, each chip's name, network, bytes per second one chip sends over
    it, and the source of the figure (costmodel.LINKS)."""
    from docs_build import costmodel as cm

    rates: dict = {
        backend: [
            {
                "key": key,
                "label": ("TPU " if backend == "tpu" else "") + cm.LINKS[key].chip,
                "network": cm.LINKS[key].within_name,
                "rate": cm.LINKS[key].within,
                "source": cm.LINKS[key].source,
                "url": cm.LINKS[key].url,
            }
            for key in keys
        ]
        for backend, keys in RATE_CHIPS.items()
    }
    rates["per_node"] = {"gpu": GPU_NODE}
    return rates


def links_script() -> str:
    text = json.dumps(link_rates(), separators=(",", ":"), ensure_ascii=True)
    return (
        '<script type="application/json" id="explorer-links">'
        + text.replace("<", "\\u003c")
        + "</script>"
    )


RATES = "<!-- explorer: rates -->"
NODE = "<!-- explorer: gpu node -->"


def rates_text() -> str:
    """The page's words for the rates the script uses: 'TPU v5e's ICI at 200 GB/s, ...'."""
    rates = link_rates()
    return "; ".join(
        f"{chip['label']}'s {chip['network']} at {chip['rate'] / 1e9:g} GB/s, from "
        f"[{chip['source']}]({chip['url']})"
        for backend in RATE_CHIPS
        for chip in rates[backend]
    )


def fill(markdown: str) -> str:
    """The explorer page with its table of examples and the size of its grid."""
    if MARKER in markdown:
        markdown = markdown.replace(MARKER, examples_table())
    if (
        COUNT in markdown
    ):  # every page passes through here: draw the grid only for this one
        markdown = markdown.replace(COUNT, f"{len(cases()):,}")
    if MOVES in markdown:
        markdown = markdown.replace(MOVES, moves_table())
    if LINKS in markdown:
        markdown = markdown.replace(LINKS, links_script())
    if RATES in markdown:
        markdown = markdown.replace(RATES, rates_text())
    if NODE in markdown:
        markdown = markdown.replace(NODE, str(GPU_NODE))
    if MOVES_CHECKED in markdown:
        markdown = markdown.replace(MOVES_CHECKED, moves_checked())
    return markdown


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--answer"]:
        print(json.dumps(_answer(json.loads(sys.stdin.read()))))
        return 0
    grid = cases()
    answers = expected(grid)
    errors = sum("error" in a for a in answers)
    print(f"{len(grid)} cases, {errors} of them errors")
    print(examples_table())
    return 0


if __name__ == "__main__":
    sys.exit(main())
