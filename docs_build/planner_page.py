"""The strategy planner's page: its constants, its static examples and its browser grid.

The planner page (docs/tools/strategy-planner.md) computes in the browser, with
docs/javascripts/strategy-planner.js, what `docs_build.planner` computes: per layout of the
devices, the state and wire bytes per device, whether the state fits, and the formula behind
each figure. This module gives the page what the script must not type in:

- `data_json`: the cost model's constants (optimizers, tiles, formulas, plans, defaults,
  the presets' sizes and sources from snippets/advanced/transformer/presets.py), written
  into the page at `<!-- planner: data -->`;
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
- `answer(case)`: what the page should show for a case of the form (each field at fault
  with what to change, or a row per layout: its figures, or, greyed, what to change), and
  `cases()`, the grid the browser tests drive the form through
  (tests/browser/test_planner.py).
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
from functools import cache

from docs_build import costmodel as cm
from docs_build import planner as pl
from docs_build import planner_grid as grid
from docs_build import planner_program, steptime, tpu_slices
from docs_build import transformer_cost as tc
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
# The form's fields that are whole numbers, in the form's order (Model's names), and its
# model options (checkboxes).
SIZES = pl.WHOLE
OPTIONS = ("gated", "tied")
# The preset menu's entry that fills in nothing.
CUSTOM = "custom"
# The remat field's names, and the Model.remat each gives (the remat page's policies by
# Config.remat's names; "full" is the page's default, True).
REMAT_FORM = {
    "none": False,
    "full": True,
    **{name: name for name in pl.REMAT_POLICIES if name != "full"},
}


def remat_text(value) -> str:
    """What the form's remat field holds for a Model.remat: "none", "full", or the
    policy's name (a name it does not know as it is, for the field to refuse)."""
    if isinstance(value, bool):
        return "full" if value else "none"
    return str(value)


MINIMUM_CASES = 100
TIMES = "\u00d7"  # the multiplication sign, as the script writes a mesh

MARKERS = {
    "data": "<!-- planner: data -->",
    "examples": "<!-- planner: examples -->",
    "tolerance": "<!-- planner: tolerance -->",
    "programs": "<!-- planner: programs -->",
    "largest state": "<!-- planner: largest state -->",
    "largest wire": "<!-- planner: largest wire -->",
    "card step": "<!-- planner: card step -->",
    "card bound": "<!-- planner: card bound -->",
    "temporaries": "<!-- planner: temporaries -->",
    "tpu temporaries": "<!-- planner: tpu temporaries -->",
    "program": "<!-- planner: program -->",
    "grid": "<!-- planner: grid -->",
    "remat": "<!-- planner: remat -->",
    "unmodelled": "<!-- planner: unmodelled -->",
    "examples compiled": "<!-- planner: examples compiled -->",
}


@cache
def compiled() -> dict:
    return json.loads(grid.RESULTS.read_text(encoding="utf-8"))


def plan_targets() -> list[str]:
    """The grid's 8-device targets: the plans the form offers are read from their
    programs (the larger targets' programs are checked under their chip's plan)."""
    return [t for t in compiled()["targets"] if t in grid.TARGETS]


def devices_of(entry: dict) -> int:
    return math.prod(entry["mesh"])


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
        all_reduced_fsdp=all_reduced_fsdp(target),
    )


def all_reduced_fsdp(target: str) -> tuple[int, ...]:
    """The fsdp axis sizes on which the grid's programs of `target`'s chip, at any device
    count, all-reduce FSDP's weights whole rather than gather them (planner.plan_of):
    (64,) for v5p, whose (1, 64, 1) programs do; () for the other chips."""
    data, chip = compiled(), target.split(":")[0]
    return tuple(
        sorted(
            {
                f
                for e in data["entries"]
                if e["target"].split(":")[0] == chip and "error" not in e
                for f in pl.plan_of(e, pl.model_of(data, e["config"])).all_reduced_fsdp
            }
        )
    )


@cache
def plans() -> dict[str, pl.Plan]:
    return {"textbook": pl.TEXTBOOK} | {t: grid_plan(t) for t in plan_targets()}


def plan_label(name: str) -> str:
    if name == "textbook":
        return "textbook (what the code asks for)"
    return f"as compiled for {TARGET_NAMES.get(name, name)}"


DEFAULTS = {
    "preset": CUSTOM,
    # the transformer page's TPU size (planner_grid.CONFIGS["page"]) on 8 devices: one
    # key/value head per query head, a two-matrix MLP, an own output head
    **grid.CONFIGS[PLAN_CONFIG][0],
    "kv_heads": grid.CONFIGS[PLAN_CONFIG][0]["heads"],
    "gated": False,
    "tied": False,
    "batch": grid.CONFIGS[PLAN_CONFIG][1],
    "remat": True,
    "optimizer": "adamw",
    "param_bytes": 4,
    "microbatches": 8,
    "devices": 8,
    "memory": 1,
    "backend": "cpu",
    "plan": "textbook",
    "chip": "h100",
}


# The model's fields that make a compiled size: its whole numbers but the microbatches,
# which only shape the pipeline, and its three options.
SIZE_FIELDS = (
    *(name for name in pl.WHOLE if name != "microbatches"),
    "remat",
    "gated",
    "tied",
)
# What a row's "figures" cell says; the script fills the same templates (str.format's
# {name}, which it replaces with the same values).
LABELS = {
    "checked": "checked against the compiled {target} program",
    "extrapolated": "extrapolated from the {devices}-device {target} programs of {sizes} "
    "to {what}",
    # how many sizes the nearest compiled device count has
    "sizes": "the {sizes} compiled sizes",
    "one size": "the one compiled size",
    "pipeline": "the planner's model, not compiled: the grid compiles data, fsdp and "
    "tensor meshes only",
    # the textbook plan: every target's programs at the nearest compiled device count
    "every target": "{targets}",
    "textbook": "the textbook plan",
    "devices": "{devices} devices",
    "one device": "one device",
    "size": "a size not compiled",
    "optimizer": "the {optimizer} optimizer",
    "param_bytes": "bfloat16 parameters",
    "backend": "the {backend} state formula",
    "mesh": "this mesh",
    "plan": "this program, which the offered plan misses",
    "and": ", ",
    # the time and temporaries a row cannot give, and why
    "no temporaries": "no temporaries for a pipeline (no activation model of its "
    "schedule), so not ranked",
    "no peak": "no time: a CPU has no published bfloat16 peak; pick a TPU or GPU chip",
    # the sequences per device above which a row is compute-bound: none (its network's
    # bytes grow with the batch as fast as its FLOPs), or below one (from one sequence)
    # the fold below a long table
    "fold": "The other {rows} layouts ({greyed} of them greyed, each saying why)",
    # a greyed row: the model's needs, then the TPU slice's (tpu_slices.refusal); and the
    # program a refused mesh does not get
    "cannot split": "cannot split this model: ",
    "refused": "not on this slice: ",
    "no program": "no program: {why}",
    # beside the temporaries: what an offloading remat policy keeps in host memory
    "host": " (+ {host} in host memory)",
    "never": "never",
    "any": "any",
}


def backend_of(target: str) -> str:
    """The state formula that holds for a target's programs (as planner.against_compiled):
    a TPU's arrays padded to tiles, or a CPU's and a GPU's as they are."""
    return "tpu" if tg.family(target) == "tpu" else "cpu"


def target_label(target: str) -> str:
    return {"cpu": "CPU", "tpu": "TPU", "gpu": "GPU"}[tg.family(target)] + (
        "" if target == "cpu" else f" {target}"
    )


def size_of(config: dict) -> dict:
    """A size (a grid configuration's fields and batch) as the form gives it: kv_heads as a
    number (one per query head when the configuration names none), gated and tied as yes
    or no (a field it does not name, such as remat, is left out)."""
    return {
        **{k: config[k] for k in SIZE_FIELDS if k in config},
        "kv_heads": config.get("kv_heads") or config["heads"],
        **{k: config.get(k, False) for k in OPTIONS},
    }


def points() -> list[list]:
    """Where the grid compiled: [plan target, devices, target, its label, the sizes (their
    indices in the grid's configs)] for each target, by plan target and device count."""
    data = compiled()
    names = list(data["configs"])
    found = {}
    for e in data["entries"]:
        key = (grid.plan_target(e["target"]), devices_of(e), e["target"])
        found.setdefault(key, set()).add(names.index(e["config"]))
    order = plan_targets()
    return [
        [plan, n, target, target_label(target), sorted(sizes)]
        for (plan, n, target), sizes in sorted(
            found.items(), key=lambda kv: (order.index(kv[0][0]), kv[0][1])
        )
    ]


def nearest(counts, n: int) -> int:
    """The count nearest `n` by ratio (16 is nearer 8 than 64), the smaller on a tie; in
    whole numbers, as the script compares them."""
    best = None
    for c in sorted(counts):
        if best is None or max(c, n) * min(best, n) < max(best, n) * min(c, n):
            best = c
    return best


@cache
def coverage() -> dict:
    """What the grid compiled, as the planner's rows meet it: its sizes (the model fields
    of each configuration), its targets (their plan's name, label and state formula, and
    where each compiled: [devices, label, size indices] per device count), every
    compiled point for the textbook plan, the optimizer and parameter type, and each
    program a planner row can be (a layout the planner lists for that many devices) as
    [size index, data, fsdp, tensor, plan target, held]: held when the row's figures under
    the plan target's offered plan and the target's state formula are within
    planner.TOLERANCE of the program's own (a 64-chip v5p program under the plan read
    from v5p:2x2x2's)."""
    data = compiled()
    names = list(data["configs"])
    sizes = [size_of(data["configs"][c]) for c in names]
    plan_of = plans()
    programs = []
    for e in data["entries"]:
        listed = {lay.mesh for lay in pl.layouts(devices_of(e), stages=False)}
        if tuple(e["mesh"]) not in listed or e["config"] not in names:
            continue
        model, layout = pl.model_of(data, e["config"]), pl.entry_layout(e)
        target = grid.plan_target(e["target"])
        state = pl.state_bytes(model, layout, backend_of(e["target"]))
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
    where = points()
    return {
        "sizes": sizes,
        "targets": {
            t: {
                "label": target_label(t),
                "backend": backend_of(t),
                "points": [p[1:2] + p[3:] for p in where if p[0] == t],
            }
            for t in plan_targets()
        },
        "points": [p[1:2] + p[3:] for p in where],
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
    # the compiled point nearest the row: the target's (every target's for the textbook
    # plan) programs at the device count nearest this one, and their sizes
    near = target["points"] if target else cov["points"]
    n = nearest({p[0] for p in near}, case["devices"])
    at = [p for p in near if p[0] == n]
    compiled_sizes = sorted({i for p in at for i in p[2]})
    if case["devices"] == 1:
        what.append(words["one device"])
    elif case["devices"] != n:
        what.append(words["devices"].format(devices=case["devices"]))
    if index not in compiled_sizes:
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
            return True, words["checked"].format(target=at[0][1])
        what.append(words["plan"] if held else words["mesh"])
    count = len(compiled_sizes)
    return False, words["extrapolated"].format(
        devices=n,
        target=words["every target"].format(
            targets=words["and"].join(p[1] for p in at)
        ),
        sizes=words["one size" if count == 1 else "sizes"].format(sizes=count),
        what=words["and"].join(what),
    )


def model_of(case: dict) -> pl.Model:
    fields = (*SIZES, *OPTIONS, "optimizer", "param_bytes", "remat")
    return pl.Model(**{k: case[k] for k in fields})


# ------------------------------------------------------ activations, temporaries and time

# The chips the form prices a step on: a CPU (no published peak) and costmodel.LINKS's.
CHIPS = ("cpu", *cm.LINKS)
# GPUs joined by NVLink in one node (a DGX H100 or A100: the grid's h100:1x8); a TPU
# job is one slice, all on ICI.
GPU_NODE = 8


def chip_facts(chip: str) -> dict:
    """What the page prices a row with on `chip`: its name, its published bfloat16 peak
    (None for a CPU), the temporaries formula's backend (transformer_cost), the devices
    its fast links join (None: every device), and per network its name and rate."""
    if chip == "cpu":
        return {
            "label": "CPU",
            "peak": None,
            "backend": "cpu",
            "per_node": None,
            "networks": {},
        }
    links = steptime.chip(chip)
    family = steptime.FAMILY_NETWORKS[links.within_name]
    gpu = links.within_name == "NVLink"
    return {
        "label": links.chip,
        "peak": steptime.peak(chip, "bfloat16"),
        "backend": "gpu" if gpu else "tpu",
        "per_node": GPU_NODE if gpu else None,
        "networks": {
            family[0]: {"name": links.within_name, "rate": links.within},
            family[1]: {"name": links.between_name, "rate": links.between},
        },
    }


def temporaries_note(backend: str) -> str:
    """Where the temporaries formula of a backend was held to compiled programs."""
    if backend in tc.UNCHECKED:
        return "unchecked on TPU"
    target = TARGET_NAMES[tc.CHECKED[backend]]
    said = f"checked on {target} within {tc.TOLERANCE[backend]:.0%}"
    if backend == "gpu":  # the device counts of the programs it was held to
        *counts, last = sorted(
            {
                devices_of(e)
                for e in tc.checked_entries(tc.grid())
                if tc.backend_of(e["target"]) == backend
            }
        )
        if counts:
            said += f" on {', '.join(map(str, counts))} and {last} GPUs"
    return said


# The TPU program transformer_cost.UNCHECKED names: its temporaries are fewer bytes than
# the layer inputs its step keeps for the backward pass.
TPU_UNCHECKED = ("v5e:2x4", "gqa, gated, tied", (1, 1, 8))


def tpu_temporaries() -> str:
    """Why the temporaries formula is not held to TPU programs: the program UNCHECKED
    names reports fewer temporaries than its step's layer inputs, in the page's words."""
    target, config, mesh = TPU_UNCHECKED
    g = tc.grid()
    entry = next(
        e
        for e in g["entries"]
        if (e["target"], e["config"], tuple(e["mesh"])) == TPU_UNCHECKED
    )
    temp = entry["memory"]["temp_bytes"]
    kept = tc.residual_bytes(pl.model_of(g, config), pl.entry_layout(entry))["layers"]
    if temp >= kept:
        raise ValueError(f"{TPU_UNCHECKED}: {temp} bytes of temporaries hold {kept}")
    return (
        f"On {TARGET_NAMES[target]} ({target}), the grid's Llama-style size on the mesh "
        f"{mesh_text([*mesh, 1])} reports {size_text(temp)} of temporaries, fewer than "
        f"the {size_text(kept)} of layer inputs its step keeps for the backward pass: "
        "they do not count what the formula counts, so the formula is not held to TPU "
        "programs"
    )


def temporaries_checked() -> str:
    """Where the temporaries formula holds, every backend in words."""
    return "; ".join(temporaries_note(b) for b in tc.BACKENDS)


# The remat page's step (docs_build/compiled/advanced.py) compiled under each policy, by
# the strategy its records name.
POLICY_STEPS = {
    False: "transformer step, no remat",
    True: "transformer step, remat",
    **{name: f"transformer step, remat {name}" for name in pl.REMAT_POLICIES[1:]},
}


def policy_programs(backend: str) -> list[tuple]:
    """The remat page's step compiled for `backend`'s checked target (CPU, h100:1x8)
    under each policy: (policy, temporaries by formula, the program's temp bytes, host
    bytes by formula)."""
    from docs_build.compiled import advanced

    path = tc.HERE / "compiled" / "results" / f"{backend}.json"
    programs = json.loads(path.read_text())["advanced"]["programs"]
    target = tc.CHECKED[backend]
    found = []
    for policy, strategy in POLICY_STEPS.items():
        (row,) = [
            p for p in programs if p["target"] == target and p["strategy"] == strategy
        ]
        cfg = dataclasses.replace(advanced.TRANSFORMER, remat=policy)
        model = pl.Model.from_config(cfg, batch=advanced.TRANSFORMER_BATCH)
        mesh = row["mesh"]
        layout = pl.Layout("page", mesh["data"], mesh["fsdp"], mesh["tensor"])
        found.append(
            (
                policy,
                tc.policy_temp_bytes(model, layout, policy, backend),
                row["memory"]["temp_bytes"],
                tc.host_bytes(model, layout, policy, backend),
            )
        )
    return found


def policy_gap(backend: str) -> float:
    """The largest |formula / compiled - 1| of policy_programs(backend)."""
    return max(abs(f / c - 1) for _, f, c, _ in policy_programs(backend))


def card_policies() -> list[tuple]:
    """The real H100's step under each policy (results/gpu_card_remat.json, one device):
    (policy, state + temporaries by formula, the allocator's peak, host bytes by
    formula, host bytes the compiled program reported)."""
    from docs_build.compiled import card

    record = card.remat_record()
    model = pl.Model(**record["fields"], batch=record["batch"])
    one = pl.Layout("one device")
    found = []
    for name, run in record["policies"].items():
        policy = {"False": False, "True": True}.get(name, name)
        model = dataclasses.replace(model, remat=policy)
        state = pl.state_bytes(model, one)
        found.append(
            (
                policy,
                state + tc.policy_temp_bytes(model, one, policy, "gpu"),
                run["peak_bytes_in_use"],
                tc.host_bytes(model, one, policy, "gpu"),
                run["memory"]["host_temp"],
            )
        )
    return found


def remat_note() -> str:
    """What the policies' temporaries were held to, in the page's words: the compiled
    CPU and H100 steps (largest gap, against the tolerance), the real H100's peak and
    host bytes; TPU unchecked."""
    said = [
        f"within {policy_gap(b):.1%} of the {TARGET_NAMES[tc.CHECKED[b]]} program's "
        f"(tolerance {tc.TOLERANCE[b]:.0%})"
        for b in tc.CHECKED
    ]
    card = card_policies()
    over = [total / peak - 1 for _, total, peak, _, _ in card]
    (host,) = {measured for *_, measured in card if measured}
    return (
        f"compiled for a 2 {TIMES} 2 {TIMES} 2 mesh of eight devices, the temporaries "
        f"by formula came {' and '.join(said)} under every policy; run on one real "
        "H100 (one device), the "
        f"state and temporaries by formula were {min(over):.1%} to {max(over):.1%} "
        "above the allocator's measured peak for every policy, and offload's host bytes "
        f"were the {size_text(host)} the program reported; on TPU the policies are "
        "unchecked"
    )


def chip_note(chip: str) -> str:
    """What a row's memory and time on `chip` rest on, in words."""
    facts = chip_facts(chip)
    note = f"temporaries by formula, {temporaries_note(facts['backend'])}"
    if chip != "cpu" and facts["backend"] == "gpu" and chip != "h100":
        note += f" (the H100's formula: no {facts['label']} program compiled)"
    if facts["peak"] is None:
        return note + "; " + LABELS["no peak"]
    nets = " and ".join(
        f"{n['name']} at {n['rate'] / 1e9:g} GB/s" for n in facts["networks"].values()
    )
    where = (
        f"{GPU_NODE} GPUs per node" if facts["per_node"] else "every chip in one slice"
    )
    return (
        f"{note}; time: lower bounds at {facts['label']}'s published bfloat16 peak of "
        f"{facts['peak'] / 1e12:g} TFLOP/s and {nets} ({where})"
    )


def time_of(
    model: pl.Model, layout: pl.Layout, chip: str, plan: pl.Plan = pl.TEXTBOOK
) -> dict:
    """A row's lower bounds on one step's seconds on `chip` with the wire bytes of `plan`
    (transformer_cost.time_bound and mfu_bound), the sequences per device above which it
    is compute-bound (transformer_cost.compute_bound_batch), or why there are none."""
    facts = chip_facts(chip)
    if facts["peak"] is None:
        return {"why": LABELS["no peak"]}
    try:
        bound = tc.time_bound(model, layout, chip, facts["per_node"], plan)
        threshold = tc.compute_bound_batch(model, layout, chip, facts["per_node"], plan)
    except cm.CostModelError as err:
        return {"why": str(err)}
    # transformer_cost.mfu_bound's arithmetic, under the row's plan
    useful = tc.model_flops(model) / layout.devices / facts["peak"]
    mfu = useful / bound.perfect_overlap
    return {
        "compute": bound.compute,
        "networks": bound.networks,
        "no_overlap": bound.no_overlap,
        "perfect_overlap": bound.perfect_overlap,
        "mfu": mfu,
        "compute_bound": threshold,
    }


def memory_of(model: pl.Model, layout: pl.Layout, chip: str, state, memory) -> dict:
    """A row's temporaries per device under the model's remat policy
    (transformer_cost.policy_temp_bytes: the activations kept for the backward pass and
    the buffers beside them at the step's peak), what the policy keeps in host memory
    instead (transformer_cost.host_bytes, not counted against `memory`), the total with
    the state, and the room it leaves in `memory` bytes (negative: over by that much)."""
    backend = chip_facts(chip)["backend"]
    temporaries = tc.policy_temp_bytes(model, layout, model.remat, backend)
    total = state + temporaries
    return {
        "temporaries": temporaries,
        "host": tc.host_bytes(model, layout, model.remat, backend),
        "total": total,
        "room": memory - total,
        "total_fits": total <= memory,
    }


def ranked(rows: list[dict]) -> list[dict]:
    """Numbers the rows with a time whose state and temporaries fit, fastest perfect-overlap
    bound first (ties in the layouts' order); the rows stay in the layouts' order."""
    fast = [r for r in rows if r.get("total_fits") and "perfect_overlap" in r["time"]]
    fast.sort(key=lambda r: r["time"]["perfect_overlap"])  # stable: ties keep order
    for rank, r in enumerate(fast, 1):
        r["rank"] = rank
    return rows


def ordered(rows: list[dict]) -> list[dict]:
    """The rows as the page shows them: the ranked ones first, by rank, then the others in
    the layouts' order."""
    fast = sorted((r for r in rows if r["rank"]), key=lambda r: r["rank"])
    return fast + [r for r in rows if not r["rank"]]


def presets() -> dict:
    """The preset menu: each published model's sizes as the form's fields, where they come
    from, and its published parameter count (snippets/advanced/transformer/presets.py)."""
    from snippets.advanced.transformer.presets import PRESETS

    return {
        name: {
            "fields": {
                **{k: getattr(p.config, k) for k in SIZES if hasattr(p.config, k)},
                "kv_heads": p.config.kv,
                **{k: getattr(p.config, k) for k in OPTIONS},
            },
            "config_source": p.config_source,
            "published": p.published,
            "published_source": p.published_source,
        }
        for name, p in PRESETS.items()
    }


def problems(case: dict) -> dict[str, str]:
    """Each field of the form no layout could use, with what to change (planner's
    messages; an unknown preset gets the presets module's)."""
    from snippets.advanced.transformer.presets import preset

    found = {}
    if case["preset"] != CUSTOM:
        try:
            preset(case["preset"])
        except ValueError as err:
            found["preset"] = str(err)
    try:
        model_of(case)
    except pl.InputError as err:
        found |= err.problems
    devices, memory = case["devices"], case["memory"]
    if isinstance(devices, bool) or not isinstance(devices, int) or devices < 1:
        found["devices"] = f"devices must be a positive integer, not {devices!r}"
    if isinstance(memory, bool) or not isinstance(memory, int | float) or memory <= 0:
        found["memory"] = (
            f"memory per device must be a positive number of GiB, not {memory!r}"
        )
    return found


def answer(case: dict) -> dict:
    """What the page shows for a case of its form: each field at fault with what to change,
    or a row for every layout of the devices: its figures, or, where the layout cannot
    split the model, why and what to change (the row greyed, the others standing)."""
    found = problems(case)
    if found:
        return {"errors": found}
    model = model_of(case)
    table = iter(
        pl.plan_table(
            model,
            case["devices"],
            case["memory"] * GIB,
            plans()[case["plan"]],
            case["backend"],
        )
    )
    rows = []
    for layout in pl.layouts(case["devices"]):
        row = {
            "layout": layout.name,
            "mesh": [*layout.mesh, layout.stages],
            "rank": None,
        }
        why = pl.reasons(model, layout)
        refused = mesh_refusal(case, layout, model)
        if why or refused:
            if not why:
                next(table)  # priced by plan_table, greyed here
            greyed = {**row, "valid": False, "reason": "; ".join(why)}
            rows.append(greyed | ({"refused": refused} if refused else {}))
            continue
        r = next(table)
        assert r.layout == layout  # plan_table keeps the layouts that divide, in order
        checked, text = basis(case, layout)
        figures = {
            **row,
            "valid": True,
            "state": r.state,
            "wire": r.wire,
            "terms": r.terms,
            "fits": r.fits,
            "checked": checked,
            "basis": text,
        }
        if layout.stages == 1:
            memory = case["memory"] * GIB
            figures |= memory_of(model, layout, case["chip"], r.state, memory)
        figures["time"] = time_of(model, layout, case["chip"], plans()[case["plan"]])
        rows.append(figures)
    found = {"rows": ranked(rows)}
    if none := pl.no_layout(model, case["devices"]):
        found["none"] = none
    if said := tpu_slices.note(case["chip"], case["devices"]):
        found["slice"] = said
    return found


def mesh_refusal(case: dict, layout: pl.Layout, model: pl.Model) -> str | None:
    """Why `jax.make_mesh` refuses a row's mesh on the published TPU slice of the case's
    chip and device count, with the meshes of its kind it builds there that split the
    model (tpu_slices); None where it builds it, on a GPU or CPU, for a count with no
    published slice, and for a pipeline (whose stages the planner prints no mesh for)."""
    if layout.stages > 1:
        return None

    def splits(mesh: tuple[int, int, int]) -> bool:
        return not pl.reasons(model, pl.Layout(pl.name_of(*mesh), *mesh))

    return tpu_slices.refusal(case["chip"], case["devices"], layout.mesh, splits)


def row_program(case: dict, row: dict) -> dict[str, str]:
    """A row's program ({"text": ...}), or why it has none ({"why": ...}): never the
    program of a mesh make_mesh refuses on the case's slice (the script does the same)."""
    if row.get("refused"):
        return {"why": LABELS["no program"].format(why=row["refused"])}
    return planner_program.text_or_why(model_of(case), row_layout(row))


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
    """(data, fsdp, tensor), or a pipeline's stages and the mesh of each stage."""
    a, f, t, s = mesh
    if s == 1:
        return f"{a} {TIMES} {f} {TIMES} {t}"
    return f"{s} stages" + ("" if f * t == 1 else f" of {a} {TIMES} {f} {TIMES} {t}")


# The static examples: the form's defaults, and a preset's model on more devices.
EXAMPLE_PRESET = "Llama-3-8B"


EXAMPLE_BATCH = 64  # one sequence per device on 64 devices


def _on(chip: str, **form) -> dict:
    """Llama-3-8B on 64 chips of `chip`, with the chip's published memory in whole GiB
    (costmodel.LINKS, taken as bytes)."""
    return {
        **DEFAULTS,
        "preset": EXAMPLE_PRESET,
        **presets()[EXAMPLE_PRESET]["fields"],
        "batch": EXAMPLE_BATCH,
        "devices": 64,
        "memory": int(cm.LINKS[chip].memory_bytes // GIB),
        "chip": chip,
        **form,
    }


@cache
def examples() -> tuple[dict, ...]:
    return (
        DEFAULTS,
        _on("v5p", backend="tpu", plan="v5p:2x2x2"),
        _on("h100", backend="cpu", plan="h100:1x8"),
    )


def example_title(case: dict) -> str:
    model = model_of(case)
    name = "" if case["preset"] == CUSTOM else f"{case['preset']}: "
    return (
        f"{name}{model.params / 1e6:,.0f} M parameters ({case['layers']} layers, d_model "
        f"{case['d_model']}), {case['optimizer']}, float32; {case['devices']} devices of "
        f"{case['memory']} GiB; {'TPU' if case['backend'] == 'tpu' else 'CPU'} formula, "
        f"plan {plan_label(case['plan'])}; {chip_facts(case['chip'])['label']}: "
        f"{chip_note(case['chip'])}"
    )


def figure_text(value: float, units: tuple[tuple[float, str], ...]) -> str:
    """Three or four figures, half up, in the first unit the value reaches (the script
    does the same operations)."""
    scale, unit = next((u for u in units if value >= u[0]), units[-1])
    value = value / scale
    places = 2 if value < 10 else 1 if value < 100 else 0
    scaled = int(value * 10**places + 0.5)
    whole, part = divmod(scaled, 10**places)
    return f"{whole:,}" + (f".{part:0{places}d}" if places else "") + unit


TIME_UNITS = ((1.0, " s"), (1e-3, " ms"), (1e-6, " \u00b5s"), (1e-9, " ns"))


def time_text(seconds: float) -> str:
    return "0 s" if seconds == 0 else figure_text(seconds, TIME_UNITS)


def percent_text(fraction: float) -> str:
    """A percentage in figure_text's digits; below 1% in hundredths (an MFU bound of a
    layout whose links take far longer than its FLOPs)."""
    return figure_text(fraction * 100, ((1.0, "%"),))


def bound_text(sequences: float) -> str:
    """A row's compute-bound threshold: never, from any whole batch, or above a number of
    sequences per device."""
    if sequences == float("inf"):
        return LABELS["never"]
    if sequences < 1:  # a device holds a whole sequence or more
        return LABELS["any"]
    return figure_text(sequences, ((1.0, ""),))


def room_text(r: dict) -> str:
    """Whether state and temporaries fit, and by how much they miss or what they leave."""
    if r["total_fits"]:
        return f"fits, {size_text(r['room'])} to spare"
    return f"does not fit by {size_text(-r['room'])}"


def network_text(networks: dict[str, float], chip: str) -> str:
    names = chip_facts(chip)["networks"]
    said = [f"{names[n]['name']} {time_text(s)}" for n, s in networks.items() if s]
    return ", ".join(said) or "none"


COLUMNS = (
    "rank",
    "layout",
    f"mesh (data {TIMES} fsdp {TIMES} tensor)",
    "state per device",
    "state fits",
    "temporaries",
    "state + temporaries",
    "wire per step per device",
    "compute at least",
    "network at least",
    "step at least (overlap, none)",
    "MFU at most",
    "compute-bound above (sequences per device)",
    "figures",
)


def greyed_text(r: dict) -> str:
    """A greyed row's words: what the model needs, and what the slice's make_mesh does."""
    said = [LABELS["cannot split"] + r["reason"]] if r["reason"] else []
    if r.get("refused"):
        said.append(LABELS["refused"] + r["refused"])
    return "; ".join(said)


def example_cells(r: dict, chip: str) -> list[str]:
    """A row of the examples' table: as the script's columns, in words."""
    where = [str(r["rank"] or ""), r["layout"], mesh_text(r["mesh"])]
    if not r["valid"]:
        return [*where, *[""] * (len(COLUMNS) - 4), greyed_text(r)]
    cells = [*where, size_text(r["state"]), "yes" if r["fits"] else "no"]
    if "temporaries" in r:
        host = LABELS["host"].format(host=size_text(r["host"])) if r["host"] else ""
        cells += [
            size_text(r["temporaries"]) + host,
            f"{size_text(r['total'])}: {room_text(r)}",
        ]
    else:
        cells += ["", LABELS["no temporaries"]]
    cells.append(size_text(r["wire"]))
    t = r["time"]
    if "why" in t:
        cells += ["", "", t["why"], "", ""]
    else:
        cells += [
            time_text(t["compute"]),
            network_text(t["networks"], chip),
            f"{time_text(t['perfect_overlap'])}, {time_text(t['no_overlap'])}",
            percent_text(t["mfu"]),
            bound_text(t["compute_bound"]),
        ]
    return [*cells, r["basis"]]


# The rows a table shows open (the ranked ones first); the others go in a fold below it.
FOLD = 16


def fold_label(rest: list[dict]) -> str:
    """The fold's title: how many rows it holds, and how many of them are greyed."""
    greyed = sum(not r["valid"] for r in rest)
    return LABELS["fold"].format(rows=len(rest), greyed=greyed)


def folded(rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """The rows as the page shows them (ordered), split into those shown open and those
    in the fold (none where the table is short)."""
    rows = ordered(rows)
    return rows[:FOLD], rows[FOLD:]


SEARCH_EXCLUDED = '<div markdown="1" data-search-exclude="figures">'


def examples_table(case: dict) -> str:
    found = answer(case)
    head = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]

    def lines(rows):
        return ["| " + " | ".join(example_cells(r, case["chip"])) + " |" for r in rows]

    shown, rest = folded(found["rows"])
    # The tables are figures, not words to search for: left out of the search index
    # (their title and the section's prose stay in).
    text = [f"**{example_title(case)}**", "", SEARCH_EXCLUDED, "", *head, *lines(shown)]
    if rest:
        text += ["", f'??? note "{fold_label(rest)}"', ""]
        text += ["    " + line for line in [*head, *lines(rest)]]
    return "\n".join([*text, "", "</div>"])


def program_row(case: dict) -> dict:
    """The row whose program the page prints first: the top-ranked one, or, where no row
    is ranked, the first the page shows."""
    rows = ordered(answer(case)["rows"])
    return next((r for r in rows if r["rank"] == 1), rows[0])


def row_layout(row: dict) -> pl.Layout:
    a, f, t, s = row["mesh"]
    return pl.Layout(row["layout"], data=a, fsdp=f, tensor=t, stages=s)


def program_note(case: dict, row: dict) -> str:
    """The words above a row's program (the script writes the same)."""
    rank = f"ranked {row['rank']}" if row["rank"] else "not ranked"
    return f"{row['layout']}, {mesh_text(row['mesh'])} ({rank}) for the form's input:"


def program_html(case: dict) -> str:
    """The program section's static content: the program of `case`'s first row, printed
    by planner_program (the script replaces it with the reader's choice)."""
    import html

    row = program_row(case)
    shown = row_program(case, row)
    body = shown.get("text", shown.get("why"))
    return (
        '<div id="planner-program" class="planner-program">\n'
        '<p class="planner-program-pick" hidden><label>Layout <select '
        'name="program-layout" data-planner="program-layout"></select></label></p>\n'
        f'<p data-planner="program-note">{html.escape(program_note(case, row))}</p>\n'
        f'<pre><code data-planner="program">{html.escape(body)}</code></pre>\n'
        "</div>"
    )


@cache
def own_figures() -> tuple[tuple[dict, dict, bool], ...]:
    """Each grid entry with its figures under the plan read from the program itself
    (planner.against_compiled), computed once, and whether the model describes it: its
    wire bytes within the tolerance. On 256 v5e chips one program is not: libtpu moves
    the attention output's FSDP weights with all-reduces and gathers the others, which
    no plan the model reads describes (a program that all-reduces every FSDP weight, as
    on 64 v5p chips, is Plan.all_reduced_fsdp's)."""
    data = compiled()
    found = []
    for entry in data["entries"]:
        figures = pl.against_compiled(data, entry)
        ours, theirs = figures["wire"]
        found.append((entry, figures, abs(ours - theirs) <= pl.TOLERANCE * theirs))
    return tuple(found)


def unmodelled() -> list[dict]:
    """The programs whose wire bytes the formulas miss by more than the tolerance even under
    their own plan (own_figures). Nothing checks a row against them; the page names them."""
    return [entry for entry, _, modelled in own_figures() if not modelled]


def gaps() -> dict[str, float]:
    """The largest disagreement of each figure with the compiled programs, over the grid
    (the formulas under each program's own plan, as tests/docs_build/test_planner.py),
    but the unmodelled programs, which the page names with their own gaps."""
    largest = {"state": 0.0, "wire": 0.0}
    for _, figures, modelled in own_figures():
        if modelled:
            for k, (ours, theirs) in figures.items():
                largest[k] = max(largest[k], abs(ours - theirs) / theirs)
    return largest


def unmodelled_text() -> str:
    """The unmodelled programs in words: each with its target, mesh and gap."""
    parts = [
        f"{target_label(e['target'])} on {mesh_text([*e['mesh'], 1])} "
        f"({e['config']}: the formula {1 - figures['wire'][0] / figures['wire'][1]:.1%} "
        "short of its bytes)"
        for e, figures, modelled in own_figures()
        if not modelled
    ]
    return ", and ".join(parts) if parts else "none"


def example_program(case: dict) -> tuple[dict, dict]:
    """An example's first-ranked row and the grid entry that compiled its program at full
    size (planner_grid.EXAMPLE_MESHES): the same size, batch and mesh, on the example's
    chip. KeyError when the grid has none (the page's first example has none)."""
    row = program_row(case)
    fields = {k: case[k] for k in SIZE_FIELDS}
    for target, config in grid.EXAMPLE_MESHES:
        stored = compiled()["configs"][config]
        if target.split(":")[0] != case["chip"] or size_of(stored) != fields:
            continue
        for e in compiled()["entries"]:
            key = (e["target"], e["config"], [*e["mesh"], 1])  # one pipeline stage
            if key == (target, config, row["mesh"]):
                return row, e
    raise KeyError((case["chip"], case["preset"], tuple(row["mesh"])))


def examples_compiled() -> list[dict]:
    """For each example whose first-ranked program the grid compiled at full size: its
    row's figures beside the program's (state against the argument bytes, wire bytes
    against the collectives', temporaries against the temp bytes), and whether each is
    within its tolerance (planner.TOLERANCE; transformer_cost.TOLERANCE for the
    temporaries of a checked backend, None where unchecked)."""
    found = []
    for case in examples():
        try:
            row, entry = example_program(case)
        except KeyError:
            continue
        backend = chip_facts(case["chip"])["backend"]
        memory = entry["memory"]
        wire = sum(s["wire_bytes"] for s in entry["summary"].values())
        figures = {
            "state": (row["state"], memory["argument_bytes"], pl.TOLERANCE),
            "wire": (row["wire"], wire, pl.TOLERANCE),
            "temporaries": (
                row["temporaries"],
                memory["temp_bytes"],
                tc.TOLERANCE.get(backend),
            ),
        }
        found.append({"case": case, "row": row, "entry": entry, "figures": figures})
    return found


def _gap_words(ours: float, theirs: float) -> str:
    gap = ours / theirs - 1
    if abs(gap) < 0.0005:
        return "the same"
    return f"{abs(gap):.1%} {'over' if gap > 0 else 'under'}"


def examples_compiled_text() -> str:
    """examples_compiled as the page's table: a row per figure of each compiled program."""
    lines = [
        "| Program | Figure | Planner | Compiled | Gap |",
        "|---|---|---:|---:|---|",
    ]
    for found in examples_compiled():
        row, entry = found["row"], found["entry"]
        program = (
            f"{row['layout']}, {mesh_text(row['mesh'])}, "
            f"{chip_facts(found['case']['chip'])['label']} ({entry['target']})"
        )
        for name, (ours, theirs, tolerance) in found["figures"].items():
            gap = _gap_words(ours, theirs)
            if tolerance is None:
                gap += ", unchecked on TPU"
            elif abs(ours / theirs - 1) <= tolerance:
                gap += f", within {tolerance:.0%}"
            else:
                gap += f", outside {tolerance:.0%}"
            lines.append(
                f"| {program} | {name} | {size_text(ours)} | {size_text(theirs)} | {gap} |"
            )
    return "\n".join(lines)


def size_words(config: dict) -> str:
    """A grid size's fields in words: `vocab 2048, width 256, 8 heads, ...`."""
    heads = f"{config['heads']} heads"
    kv = config.get("kv_heads") or config["heads"]
    if kv != config["heads"]:
        heads += f" sharing {kv} key/value heads"
    mlp = f"MLP {config['mlp']}" + (" (gated)" if config.get("gated") else "")
    return ", ".join(
        [
            f"vocab {config['vocab']}" + (" (tied head)" if config.get("tied") else ""),
            f"width {config['d_model']}",
            heads,
            mlp,
            f"{config['layers']} layers",
            f"{config['seq']} tokens",
            f"batch {config['batch']}",
            "remat" if config.get("remat", True) else "no remat",
        ]
    )


def grid_table() -> str:
    """Where the grid lies: a row per target and device count, a column per compiled size,
    each cell the number of layouts (meshes) compiled; then each size's fields, and the
    layouts of each device count."""
    data = compiled()
    names = list(data["configs"])
    count = {}
    for e in data["entries"]:
        key = (e["target"], devices_of(e))
        count.setdefault(key, dict.fromkeys(names, 0))[e["config"]] += 1
    head = ["Target", "Devices", *(f"`{n}`" for n in names)]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "--:|" * (len(head) - 1)]
    order = [p[2] for p in points()]
    for (target, n), per in sorted(
        count.items(), key=lambda kv: (order.index(kv[0][0]), kv[0][1])
    ):
        cells = [str(per[c]) if per[c] else "" for c in names]
        lines.append(f"| {target_label(target)} | {n} | " + " | ".join(cells) + " |")
    meshes = {}
    for e in data["entries"]:
        meshes.setdefault(devices_of(e), {}).setdefault(tuple(e["mesh"]), None)
    lines += [""]
    lines += [f"- `{n}`: {size_words(data['configs'][n])}." for n in names]
    for n, found in sorted(meshes.items()):
        kinds = ", ".join(f"{pl.name_of(*m)} ({mesh_text([*m, 1])})" for m in found)
        lines.append(f"- {n} devices, (data, fsdp, tensor): {kinds}.")
    return "\n".join(lines)


# A model of each MLP the form offers, for what a plan says in words (its departures from
# the textbook name the MLP's matrices; nothing else about the model changes them).
FORM_MODEL = pl.Model(vocab=8, d_model=8, heads=1, mlp=8, layers=1, seq=1, batch=1)
GATED_MODEL = pl.Model(
    vocab=8, d_model=8, heads=1, mlp=8, layers=1, seq=1, batch=1, gated=True
)


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
        # per MLP: each block's matrices and the head as the gradient sums see them, and
        # the sums over tensor of a block's input gradients where a plan names none
        "mlps": {
            kind: {"matrices": pl.matrices(m), "input_sums": pl.input_sums(m)}
            for kind, m in (("plain", FORM_MODEL), ("gated", GATED_MODEL))
        },
        "formulas": pl.FORMULAS,
        "plans": {
            name: {
                "gather": p.gather,
                "gradients": p.gradients,
                "activations": p.activations,
                "scatter": p.scatter,  # null: every matrix the model has
                "input_sums": p.input_sums,  # null: one per matrix group
                "embedding_scatter": p.embedding_scatter,
                "regather": p.regather,
                "head_gather": p.head_gather,
                "block_sum": p.block_sum,
                "head_apart": p.head_apart,
                "all_reduced_fsdp": p.all_reduced_fsdp,
                "label": plan_label(name),
                "departures": {
                    "plain": p.departures(FORM_MODEL),
                    "gated": p.departures(GATED_MODEL),
                },
            }
            for name, p in plans().items()
        },
        "gib": GIB,
        # transformer_cost's constants: the temporaries and the FLOPs by formula
        "transformer": {
            "bf16": tc.BF16,
            "bool": tc.BOOL,
            "logits": tc.LOGITS,
            "optimizer_flops": tc.OPTIMIZER_FLOPS,
        },
        # the table's columns, as the examples' (the script adds the formulas)
        "columns": COLUMNS,
        "fold": FOLD,
        "near": pl.NEAR,
        "chips": {
            chip: {**chip_facts(chip), "note": chip_note(chip)} for chip in CHIPS
        },
        "defaults": DEFAULTS,
        "custom": CUSTOM,
        "presets": presets(),
        "program": planner_program.data(),
        # the TPU slices Google publishes and how jax.make_mesh places a mesh on them
        "slices": tpu_slices.data(),
        # the remat field: its names and the Model.remat of each, and per policy what it
        # keeps of a layer (transformer_cost.policy_residuals' terms)
        "remat": {
            "form": REMAT_FORM,
            "policies": pl.REMAT_POLICIES,
            "saves": {str(k).lower(): v for k, v in tc.POLICY_SAVES.items()},
            "offloaded": tc.OFFLOADED,
            "keeps_output_projection": pl.KEEPS_OUTPUT_PROJECTION,
        },
    }
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=True)
    return text.replace("<", "\\u003c")


def fill(markdown: str) -> str:
    """The planner page with its constants, its figures about the grid and its examples."""
    if not any(m in markdown for m in MARKERS.values()):
        return markdown
    largest = gaps()
    bound, measured, _ = tc.card_step_bound()
    values = {
        "data": f'<script type="application/json" id="planner-data">{data_json()}</script>',
        "examples": "\n\n".join(examples_table(c) for c in examples()),
        "tolerance": f"{pl.TOLERANCE:.0%}",
        "programs": str(len(compiled()["entries"])),
        "largest state": f"{largest['state']:.2%}",
        "largest wire": f"{largest['wire']:.2%}",
        "card step": time_text(measured),
        "card bound": time_text(bound),
        "temporaries": temporaries_checked(),
        "tpu temporaries": tpu_temporaries(),
        "program": program_html(DEFAULTS),
        "grid": grid_table(),
        "remat": remat_note(),
        "unmodelled": unmodelled_text(),
        "examples compiled": examples_compiled_text(),
    }
    for name, marker in MARKERS.items():
        markdown = markdown.replace(marker, values[name])
    return markdown


# ----------------------------------------------------------------- the browser tests' grid

# The compiled sizes (the form gives them all, Llama-style options included), first, then
# sizes of every scale, then the presets' models.
FORM_SIZES = [
    size_of({**fields, "batch": batch}) for fields, batch in grid.CONFIGS.values()
]
SIZE_CHOICES = [
    *FORM_SIZES,
    *(
        size_of(
            dict(
                vocab=32000,
                d_model=4096,
                heads=32,
                mlp=11008,
                layers=32,
                seq=4096,
                batch=512,
                remat=True,
            )
        ),
        size_of(
            dict(
                vocab=50304,
                d_model=1536,
                heads=12,
                kv_heads=4,
                mlp=6144,
                layers=24,
                seq=2048,
                batch=96,
                remat=False,
                gated=True,
            )
        ),
        size_of(
            dict(
                vocab=100,
                d_model=12,
                heads=3,
                kv_heads=1,
                mlp=20,
                layers=6,
                seq=7,
                batch=36,
                remat=True,
                tied=True,
            )
        ),
    ),
]
PRESET_BATCH = 512  # the batch the browser tests give each preset's model
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
# Inputs no layout could use: each case's errors are Model's messages, field by field, or
# answer()'s for the devices and the memory.
REFUSED = (
    {"d_model": 30, "heads": 4},
    {"remat": "dot"},
    {"layers": 0},
    {"memory": 0},
    {"devices": 0},
    {"kv_heads": 3},
    {"heads": 2.5, "vocab": -5, "seq": "six"},
)
# Inputs that some layouts of the form's 8 devices cannot split: those rows are greyed with
# what to change, the others keep their figures (on 6 devices, none of the page's size).
GREYED = (
    {"microbatches": 5},
    {"layers": 6},
    {"kv_heads": 2},
    {"mlp": 4100},
    {"vocab": 32770},
    {"batch": 12, "microbatches": 4},
    {"d_model": 1020, "heads": 6, "kv_heads": 6},
    {"kv_heads": 1, "gated": True, "tied": True, "batch": 24},
    {"devices": 6},
    # the meshes jax.make_mesh refuses on the 4 x 4 x 4 v5p slice (tpu_slices)
    {"chip": "v5p", "devices": 64, "batch": 64},
)
# The TPU slices the browser tests and the script's tests try: the page's model with a
# sequence per device on each v5p count of DEVICE_CHOICES (16 has no published slice) and
# on the largest v5e slice.
SLICE_CASES = (
    *({"chip": "v5p", "devices": n, "batch": n} for n in (4, 8, 16, 32, 64, 128, 256)),
    {"chip": "v5e", "devices": 256, "batch": 256},
)


def cases() -> list[dict]:
    """The form's inputs for the browser tests, drawn with a fixed seed: every size of a
    list and every preset with device counts from 1 to 256, each compiled size as the grid
    compiled it, DRAWN cases of sizes drawn freely (grouped-query attention, gated MLPs
    and tied heads among them), each with an optimizer, parameter type, backend and plan,
    the refused inputs and the inputs some layouts cannot split; each case on one of the
    chips, in turn."""
    rng = random.Random(0)
    found = []
    chosen = [(CUSTOM, sizes) for sizes in SIZE_CHOICES] + [
        (name, {**p["fields"], "batch": PRESET_BATCH}) for name, p in presets().items()
    ]
    for preset, sizes in chosen:
        for devices in DEVICE_CHOICES:
            found.append(
                {
                    **DEFAULTS,
                    "preset": preset,
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
    # rows a program checks, and those its target's plan (read at the page's size) misses
    for sizes in FORM_SIZES:
        for target in plan_targets():
            found.append(
                {
                    **DEFAULTS,
                    **sizes,
                    "devices": grid.DEVICES,
                    "plan": target,
                    "backend": backend_of(target),
                }
            )
    # and each size compiled beyond 8 devices on each count, with its chip's plan
    configs = list(compiled()["configs"].values())
    for plan, devices, target, _, indices in points():
        if devices == grid.DEVICES:
            continue
        for i in indices:
            found.append(
                {
                    **DEFAULTS,
                    **size_of(configs[i]),
                    "devices": devices,
                    "plan": plan,
                    "backend": backend_of(target),
                }
            )
    for _ in range(DRAWN):
        case = {**DEFAULTS}
        for field, options in DRAWN_CHOICES.items():
            case[field] = rng.choice(options)
        heads = WIDTHS[case["d_model"]]
        found.append(
            case
            | {
                "heads": heads,
                "kv_heads": rng.choice(
                    [k for k in range(1, heads + 1) if heads % k == 0]
                ),
                "gated": rng.choice((True, False)),
                "tied": rng.choice((True, False)),
                "remat": rng.choice((True, False)),
                "optimizer": rng.choice(sorted(pl.OPTIMIZERS)),
                "param_bytes": rng.choice((4, 2)),
                "backend": rng.choice(pl.BACKENDS),
                "plan": rng.choice(sorted(plans())),
            }
        )
    for change in (*REFUSED, *GREYED):
        found.append({**DEFAULTS, **change})
    # each chip in turn (no draw: the other fields stay as drawn)
    found = [{**c, "chip": CHIPS[k % len(CHIPS)]} for k, c in enumerate(found)]
    found += [{**DEFAULTS, **change} for change in SLICE_CASES]
    # each remat policy on every chip, at the page's size and the Llama-style one, with
    # FSDP and tensor rows among the 8 devices'
    for config in (PLAN_CONFIG, "gqa, gated, tied"):
        sizes = FORM_SIZES[list(grid.CONFIGS).index(config)]
        for remat in REMAT_FORM.values():
            found += [
                {**DEFAULTS, **sizes, "remat": remat, "chip": chip} for chip in CHIPS
            ]
    return found


def main() -> int:
    found = [answer(c) for c in cases()]
    print(
        f"{len(found)} cases, {sum('errors' in a for a in found)} refused, "
        f"{sum(len(a.get('rows', [])) for a in found)} rows"
    )
    print({k: str(p) for k, p in plans().items()})
    print(gaps())
    for c in examples():
        print(examples_table(c), end="\n\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
