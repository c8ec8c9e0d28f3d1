"""The strategy planner's page: its constants, its static examples and its browser grid.

The planner page (docs/tools/strategy-planner.md) computes in the browser, with
docs/javascripts/strategy-planner.js, what `docs_build.planner` computes: per layout of the
devices, the state and wire bytes per device, whether the state fits, and the formula behind
each figure. This module gives the page what the script must not type in:

- `data_json`: the cost model's constants (optimizers, tiles, formulas, plans, defaults),
  written into the page at `<!-- planner: data -->`;
- `PLANS`: the textbook plan and, per compiled target, the plan the grid's programs for the
  transformer page's size carried out (read by `planner.plan_of`);
- the figures the page states about the grid (`<!-- planner: tolerance -->`,
  `<!-- planner: programs -->`, `<!-- planner: largest state -->`,
  `<!-- planner: largest wire -->`) and the static table of examples a reader without the
  script sees (`<!-- planner: examples -->`);
- `coverage()` and `basis(case, layout)`: which rows a compiled program of the grid checks
  (its size, its device count, its mesh, its target's plan and state formula, AdamW on
  float32 weights, and figures within the tolerance of the program's), and, for every
  other row, what it is extrapolated from and to; the script builds the same words from
  the same data;
- `answer(case)`: what the page should show for a case of the form, and `cases()`, the
  grid the browser tests drive the form through (tests/browser/test_planner.py).
"""

from __future__ import annotations

import json
import random
from functools import cache

from docs_build import planner as pl
from docs_build import planner_grid as grid
from docs_build.compiled import targets as tg

GIB = 2**30
# The grid's size whose compiled plans the page offers (the transformer page's).
PLAN_CONFIG = "page"
TARGET_NAMES = {
    "cpu": "CPU",
    "v5e:2x4": "TPU v5e",
    "v5p:2x2x2": "TPU v5p",
    "h100:1x8": "H100",
}
# The form's fields that are whole numbers, in the form's order (Model's names).
SIZES = ("vocab", "d_model", "heads", "mlp", "layers", "seq", "batch", "microbatches")
MINIMUM_CASES = 100
TIMES = "\u00d7"  # the multiplication sign, as the script writes a mesh

MARKERS = {
    "data": "<!-- planner: data -->",
    "examples": "<!-- planner: examples -->",
    "tolerance": "<!-- planner: tolerance -->",
    "programs": "<!-- planner: programs -->",
    "largest state": "<!-- planner: largest state -->",
    "largest wire": "<!-- planner: largest wire -->",
}


@cache
def compiled() -> dict:
    return json.loads(grid.RESULTS.read_text(encoding="utf-8"))


def _entry(target: str, mesh: tuple[int, int, int]) -> dict:
    for e in compiled()["entries"]:
        if (e["target"], e["config"], tuple(e["mesh"])) == (target, PLAN_CONFIG, mesh):
            return e
    raise KeyError((target, PLAN_CONFIG, mesh))


def grid_plan(target: str) -> pl.Plan:
    """The plan `target`'s programs for the page's size carried out, one field from each
    layout that shows it: the gathers and which gradients are scattered from FSDP's
    program, the gradients' width from data parallelism's, the activations' width from
    tensor parallelism's (a width a program does not show is the textbook's)."""
    model = pl.model_of(compiled(), PLAN_CONFIG)
    n = grid.DEVICES

    def read(mesh):
        return pl.plan_of(_entry(target, mesh), model)

    fsdp, data, tensor = read((1, n, 1)), read((n, 1, 1)), read((1, 1, n))
    return pl.Plan(
        gather=fsdp.gather,
        gradients=data.gradients,
        activations=tensor.activations,
        scatter=fsdp.scatter,
        input_sums=tensor.input_sums,
        embedding_scatter=fsdp.embedding_scatter,
        regather=fsdp.regather,
        head_gather=fsdp.head_gather,
        block_sum=tensor.block_sum,
    )


@cache
def plans() -> dict[str, pl.Plan]:
    return {"textbook": pl.TEXTBOOK} | {t: grid_plan(t) for t in compiled()["targets"]}


def plan_label(name: str) -> str:
    if name == "textbook":
        return "textbook (what the code asks for)"
    return f"as compiled for {TARGET_NAMES.get(name, name)}"


DEFAULTS = {
    # the transformer page's TPU size (planner_grid.CONFIGS["page"]) on 8 devices
    **grid.CONFIGS[PLAN_CONFIG][0],
    "batch": grid.CONFIGS[PLAN_CONFIG][1],
    "remat": True,
    "optimizer": "adamw",
    "param_bytes": 4,
    "microbatches": 8,
    "devices": 8,
    "memory": 1,
    "backend": "cpu",
    "plan": "textbook",
}


# The model's fields that make a compiled size (microbatches only shape the pipeline).
SIZE_FIELDS = ("vocab", "d_model", "heads", "mlp", "layers", "seq", "batch", "remat")
# What a row's "figures" cell says; the script fills the same templates (str.format's
# {name}, which it replaces with the same values).
LABELS = {
    "checked": "checked against the compiled {target} program",
    "extrapolated": "extrapolated from the {devices}-device {target} programs of the "
    "{sizes} compiled sizes to {what}",
    "pipeline": "modelled: the step has no pipeline to compile",
    "any target": "CPU and TPU",
    "textbook": "the textbook plan",
    "devices": "{devices} devices",
    "one device": "one device",
    "size": "a size not compiled",
    "optimizer": "the {optimizer} optimizer",
    "param_bytes": "bfloat16 parameters",
    "backend": "the {backend} state formula",
    "mesh": "this mesh",
    "plan": "this size under the page size's plan",
    "and": ", ",
}


def backend_of(target: str) -> str:
    """The state formula that holds for a target's programs (as planner.against_compiled):
    a TPU's arrays padded to tiles, or a CPU's and a GPU's as they are."""
    return "tpu" if tg.family(target) == "tpu" else "cpu"


def target_label(target: str) -> str:
    return {"cpu": "CPU", "tpu": "TPU", "gpu": "GPU"}[tg.family(target)] + (
        "" if target == "cpu" else f" {target}"
    )


def _options(config: dict) -> tuple:
    """A compiled size's options the form cannot give: kv_heads, gated, tied."""
    return (
        config.get("kv_heads") not in (None, config["heads"]),
        config.get("gated", False),
        config.get("tied", False),
    )


@cache
def coverage() -> dict:
    """What the grid compiled, as the planner's rows meet it: its device count, its sizes
    (the model fields of each configuration), its targets (their plan's name, label and
    state formula), the optimizer and parameter type, and each program a planner row can
    be (a layout the planner lists for that many devices) as [size index, data, fsdp,
    tensor, target, held]: held when the row's figures under the target's offered plan
    and state formula are within planner.TOLERANCE of the program's own."""
    data = compiled()
    # the form's models only: one key/value head per query head, a two-matrix MLP, its
    # own head (a size compiled with other options checks none of the form's rows)
    names = [c for c in data["configs"] if not any(_options(data["configs"][c]))]
    sizes = [{k: data["configs"][c][k] for k in SIZE_FIELDS} for c in names]
    plan_of = plans()
    listed = {lay.mesh for lay in pl.layouts(grid.DEVICES, stages=False)}
    programs = []
    for e in data["entries"]:
        if tuple(e["mesh"]) not in listed or e["config"] not in names:
            continue
        model, layout = pl.model_of(data, e["config"]), pl.entry_layout(e)
        target = e["target"]
        state = pl.state_bytes(model, layout, backend_of(target))
        wire = pl.wire_bytes(model, layout, plan_of[target])
        compiled_wire = sum(s["wire_bytes"] for s in e["summary"].values())
        held = all(
            abs(ours - theirs) <= pl.TOLERANCE * theirs
            for ours, theirs in (
                (state, e["memory"]["argument_bytes"]),
                (wire, compiled_wire),
            )
        )
        programs.append([names.index(e["config"]), *e["mesh"], target, held])
    return {
        "devices": grid.DEVICES,
        "sizes": sizes,
        "targets": {
            t: {"label": target_label(t), "backend": backend_of(t)}
            for t in data["targets"]
        },
        "size_fields": SIZE_FIELDS,
        "optimizers": pl.CHECKED_OPTIMIZERS,
        "param_bytes": pl.CHECKED_PARAM_BYTES,
        "programs": programs,
        "labels": LABELS,
    }


def basis(case: dict, layout: pl.Layout) -> tuple[bool, str]:
    """Whether a compiled program checks this row, and the words the page shows: what
    checked it, or what it is extrapolated from and to."""
    cov = coverage()
    words = cov["labels"]
    if layout.stages > 1:
        return False, words["pipeline"]
    size = {k: case[k] for k in SIZE_FIELDS}
    index = cov["sizes"].index(size) if size in cov["sizes"] else None
    what = []
    target = None
    if case["plan"] in cov["targets"]:
        target = cov["targets"][case["plan"]]
    else:
        what.append(words["textbook"])
    if case["devices"] == 1:
        what.append(words["one device"])
    elif case["devices"] != cov["devices"]:
        what.append(words["devices"].format(devices=case["devices"]))
    if index is None:
        what.append(words["size"])
    if case["optimizer"] not in cov["optimizers"]:
        what.append(words["optimizer"].format(optimizer=case["optimizer"]))
    if case["param_bytes"] not in cov["param_bytes"]:
        what.append(words["param_bytes"])
    if target and case["backend"] != target["backend"]:
        what.append(words["backend"].format(backend=case["backend"].upper()))
    if not what:
        program = [index, *layout.mesh, case["plan"]]
        held = [p[-1] for p in cov["programs"] if p[:-1] == program]
        if held == [True]:
            return True, words["checked"].format(target=target["label"])
        what.append(words["plan"] if held else words["mesh"])
    return False, words["extrapolated"].format(
        devices=cov["devices"],
        target=target["label"] if target else words["any target"],
        sizes=len(cov["sizes"]),
        what=words["and"].join(what),
    )


def model_of(case: dict) -> pl.Model:
    fields = (*SIZES, "optimizer", "param_bytes", "remat")
    return pl.Model(**{k: case[k] for k in fields})


def answer(case: dict) -> dict:
    """What the page shows for a case of its form: the rows (each layout that divides the
    model), the layouts left out with check()'s reason, or the error the inputs raise."""
    try:
        model = model_of(case)
        table = pl.plan_table(
            model,
            case["devices"],
            case["memory"] * GIB,
            plans()[case["plan"]],
            case["backend"],
        )
    except pl.CostModelError as err:
        return {"error": str(err)}
    rows = []
    for r in table:
        checked, text = basis(case, r.layout)
        rows.append(
            {
                "layout": r.layout.name,
                "mesh": [*r.layout.mesh, r.layout.stages],
                "state": r.state,
                "wire": r.wire,
                "terms": r.terms,
                "fits": r.fits,
                "checked": checked,
                "basis": text,
            }
        )
    kept = {(*r.layout.mesh, r.layout.stages) for r in table}
    left_out = []
    for layout in pl.layouts(case["devices"]):
        if (*layout.mesh, layout.stages) not in kept:
            try:
                pl.check(model, layout)
            except pl.CostModelError as err:
                left_out.append({"layout": layout.name, "reason": str(err)})
    return {"rows": rows, "left_out": left_out}


def size_text(n: float) -> str:
    """Bytes in binary units, three or four figures; the script rounds the same way (the
    same floating-point operations, so the same digits)."""
    units = ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB")
    k = 0
    while k + 1 < len(units) and n >= 1024 ** (k + 1):
        k += 1
    if k == 0:
        return f"{int(n + 0.5):,} bytes"
    value = n / 1024**k
    places = 2 if value < 10 else 1 if value < 100 else 0
    scaled = int(
        value * 10**places + 0.5
    )  # half up, as the script's Math.floor(x + 0.5)
    whole, part = divmod(scaled, 10**places)
    digits = f"{whole:,}" + (f".{part:0{places}d}" if places else "")
    return f"{digits} {units[k]}"


def mesh_text(mesh: list[int]) -> str:
    a, f, t, s = mesh
    return f"{s} stages" if s > 1 else f"{a} {TIMES} {f} {TIMES} {t}"


# The static examples: the form's defaults, and a larger model on more devices.
EXAMPLES = (
    DEFAULTS,
    {
        **DEFAULTS,
        "vocab": 32768,
        "d_model": 4096,
        "heads": 32,
        "mlp": 16384,
        "layers": 32,
        "seq": 4096,
        "batch": 256,
        "devices": 64,
        "memory": 16,
        "backend": "tpu",
        "plan": "v5p:2x2x2",
    },
)


def example_title(case: dict) -> str:
    model = model_of(case)
    return (
        f"{model.params / 1e6:,.0f} M parameters ({case['layers']} layers, d_model "
        f"{case['d_model']}), {case['optimizer']}, float32; {case['devices']} devices of "
        f"{case['memory']} GiB; {'TPU' if case['backend'] == 'tpu' else 'CPU'} formula, "
        f"plan {plan_label(case['plan'])}"
    )


def examples_table(case: dict) -> str:
    found = answer(case)
    lines = [
        f"**{example_title(case)}**",
        "",
        f"| layout | mesh (data {TIMES} fsdp {TIMES} tensor) | state per device | fits | "
        "wire per step per device | figures |",
        "|---|---|---|---|---|---|",
    ]
    for r in found["rows"]:
        lines.append(
            f"| {r['layout']} | {mesh_text(r['mesh'])} | {size_text(r['state'])} | "
            f"{'yes' if r['fits'] else 'no'} | {size_text(r['wire'])} | {r['basis']} |"
        )
    for r in found["left_out"]:
        lines.append(f"| {r['layout']} | left out: {r['reason']} | | | | |")
    return "\n".join(lines)


def gaps() -> dict[str, float]:
    """The largest disagreement of each figure with the compiled programs, over the grid
    (the formulas under each program's own plan, as tests/docs_build/test_planner.py)."""
    data = compiled()
    largest = {"state": 0.0, "wire": 0.0}
    for entry in data["entries"]:
        for k, (ours, theirs) in pl.against_compiled(data, entry).items():
            largest[k] = max(largest[k], abs(ours - theirs) / theirs)
    return largest


# What the form's models are, for the plan's per-model counts (one key/value head per query
# head, a two-matrix MLP, an own head).
FORM_MODEL = pl.Model(vocab=8, d_model=8, heads=1, mlp=8, layers=1, seq=1, batch=1)


def data_json() -> str:
    """The constants the script computes with, as JSON safe inside a <script> element."""
    data = {
        "optimizers": pl.OPTIMIZERS,
        "coverage": coverage(),
        "f32": pl.F32,
        "int32": pl.INT32,
        "tpu": {
            "minor": pl.TPU_MINOR,
            "second": pl.TPU_SECOND,
            "scalar": pl.TPU_SCALAR,
        },
        "matrices": pl.MATRICES,
        "formulas": pl.FORMULAS,
        "plans": {
            name: {
                "gather": p.gather,
                "gradients": p.gradients,
                "activations": p.activations,
                "scatter": pl.MATRICES if p.scatter is None else p.scatter,
                "input_sums": pl.input_sums(FORM_MODEL, p),
                "embedding_scatter": p.embedding_scatter,
                "regather": p.regather,
                "head_gather": p.head_gather,
                "block_sum": p.block_sum,
                "label": plan_label(name),
                "departures": p.departures(),
            }
            for name, p in plans().items()
        },
        "gib": GIB,
        "defaults": DEFAULTS,
    }
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=True)
    return text.replace("<", "\\u003c")


def fill(markdown: str) -> str:
    """The planner page with its constants, its figures about the grid and its examples."""
    if not any(m in markdown for m in MARKERS.values()):
        return markdown
    largest = gaps()
    values = {
        "data": f'<script type="application/json" id="planner-data">{data_json()}</script>',
        "examples": "\n\n".join(examples_table(c) for c in EXAMPLES),
        "tolerance": f"{pl.TOLERANCE:.0%}",
        "programs": str(len(compiled()["entries"])),
        "largest state": f"{largest['state']:.2%}",
        "largest wire": f"{largest['wire']:.2%}",
    }
    for name, marker in MARKERS.items():
        markdown = markdown.replace(marker, values[name])
    return markdown


# ----------------------------------------------------------------- the browser tests' grid

# The compiled sizes the form can give (not those with options it lacks: kv_heads, gated,
# tied), first, then sizes of every scale.
FORM_SIZES = [
    {**fields, "batch": batch}
    for fields, batch in grid.CONFIGS.values()
    if not any(_options({"heads": fields["heads"], **fields}))
]
SIZE_CHOICES = [
    *FORM_SIZES,
    dict(
        vocab=32000,
        d_model=4096,
        heads=32,
        mlp=11008,
        layers=32,
        seq=4096,
        batch=512,
        remat=True,
    ),
    dict(
        vocab=50304,
        d_model=1536,
        heads=12,
        mlp=6144,
        layers=24,
        seq=2048,
        batch=96,
        remat=False,
    ),
    dict(vocab=100, d_model=12, heads=3, mlp=20, layers=6, seq=7, batch=36, remat=True),
]
DEVICE_CHOICES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 256)
# Sizes drawn freely (with device counts that have factors 3 and 5, whose ring shares
# (n-1)/n are not exact in binary): among them, rows where Python's sum() of the wire terms
# (compensated, since Python 3.12) and a plain left-to-right sum differ in the last bits,
# which the script must reproduce.
DRAWN = 120
WIDTHS = {768: 12, 960: 15, 1536: 12, 4096: 32}  # d_model: heads
DRAWN_CHOICES = {
    "vocab": (1000, 30522, 32000, 50257, 50304, 30720),
    "d_model": tuple(WIDTHS),
    "mlp": (3072, 3840, 11008, 16384),
    "layers": (12, 24, 30, 32),
    "seq": (1000, 2048, 4095, 4096),
    "batch": (96, 120, 192, 240, 256),
    "devices": (3, 5, 6, 10, 12, 15, 24, 30, 48, 60, 96, 120),
    "microbatches": (1, 2, 4),
    "memory": (0.25, 2, 16),
}
# Inputs the planner refuses: each case's error is Model's or plan_table's message.
REFUSED = (
    {"d_model": 30, "heads": 4},
    {"layers": 0},
    {"memory": 0},
)
# Microbatches that do not divide the batch: the pipeline's problem, not the table's.
PIPELINE_ONLY = ({"microbatches": 5},)


def cases() -> list[dict]:
    """The form's inputs for the browser tests, drawn with a fixed seed: every size of a
    list with device counts from 1 to 256, each compiled size as the grid compiled it,
    DRAWN cases of sizes drawn freely, each with an optimizer, parameter type, backend and
    plan, and the refused inputs."""
    rng = random.Random(0)
    found = []
    for sizes in SIZE_CHOICES:
        for devices in DEVICE_CHOICES:
            found.append(
                {
                    **DEFAULTS,
                    **sizes,
                    "devices": devices,
                    "optimizer": rng.choice(sorted(pl.OPTIMIZERS)),
                    "param_bytes": rng.choice((4, 2)),
                    "microbatches": rng.choice((1, 2, 4)),
                    "memory": rng.choice((0.5, 1, 16, 80)),
                    "backend": rng.choice(pl.BACKENDS),
                    "plan": rng.choice(sorted(plans())),
                }
            )
    # each compiled size on its 8 devices with each target's plan and state formula: the
    # rows a program checks, and the v5e FSDP rows its plan misses
    for sizes in FORM_SIZES:
        for target in compiled()["targets"]:
            found.append(
                {
                    **DEFAULTS,
                    **sizes,
                    "devices": grid.DEVICES,
                    "plan": target,
                    "backend": backend_of(target),
                }
            )
    for _ in range(DRAWN):
        case = {**DEFAULTS}
        for field, options in DRAWN_CHOICES.items():
            case[field] = rng.choice(options)
        found.append(
            case
            | {
                "heads": WIDTHS[case["d_model"]],
                "remat": rng.choice((True, False)),
                "optimizer": rng.choice(sorted(pl.OPTIMIZERS)),
                "param_bytes": rng.choice((4, 2)),
                "backend": rng.choice(pl.BACKENDS),
                "plan": rng.choice(sorted(plans())),
            }
        )
    for change in (*REFUSED, *PIPELINE_ONLY):
        found.append({**DEFAULTS, **change})
    return found


def main() -> int:
    found = [answer(c) for c in cases()]
    print(
        f"{len(found)} cases, {sum('error' in a for a in found)} refused, "
        f"{sum(len(a.get('rows', [])) for a in found)} rows"
    )
    print({k: str(p) for k, p in plans().items()})
    print(gaps())
    for c in EXAMPLES:
        print(examples_table(c), end="\n\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
