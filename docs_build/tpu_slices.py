"""Which (data, fsdp, tensor) meshes `jax.make_mesh` builds on a TPU slice, as data.

The strategy planner prints a `jax.make_mesh` call for the layout a reader picks. On a TPU
slice, make_mesh maps each mesh axis onto the slice's physical sides (jax/_src/mesh_utils.py,
`_create_device_mesh_for_nd_torus`), and on v5p it does not split a side between two axes:
a 64-chip v5p slice is a 4 x 4 x 4 cube, so a mesh axis holds 4, 16 or 64 chips, and
(8, 8, 1) is refused with `NotImplementedError`. On v5e, make_mesh passes
`allow_split_physical_axes=True` and builds every mesh. This module holds:

- `SLICES`: the slice shape Google publishes for each chip count (the sources in
  `SOURCES`), the only shapes the planner checks a mesh against: a count with no
  published shape is not checked, never guessed;
- the rule (`accepts`, `refusal`): on v5e every mesh; on v5p each axis the product of
  whole sides, each side given to one axis;
- `python -m docs_build.tpu_slices` (libtpu's compile-only devices, under the libtpu lock,
  in the planner's environment): tries make_mesh on every (data, fsdp, tensor) mesh of
  every published slice and writes what it accepted and refused to tpu_slices.json, which
  tests/docs_build/test_tpu_slices.py holds the rule to.
"""

from __future__ import annotations

import argparse
import itertools
import math
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "tpu_slices.json"
AXES = ("data", "fsdp", "tensor")

# The slice shapes Google Cloud's pages list, by chip count. v5e: "v5e supports the
# following 2D slice shapes" (1x1 to 16x16, a 2D torus). v5p: "the most common single-slice
# shapes supported with v5p, plus most (but not all) full cube shapes greater than 1 cube"
# (2x2x1 to 16x16x24; no shape of 16 chips is listed, though v5p-32 has 16 chips).
SLICES = {
    "v5e": {
        1: (1, 1),
        4: (2, 2),
        8: (2, 4),
        16: (4, 4),
        32: (4, 8),
        64: (8, 8),
        128: (8, 16),
        256: (16, 16),
    },
    "v5p": {
        4: (2, 2, 1),
        8: (2, 2, 2),
        32: (2, 4, 4),
        64: (4, 4, 4),
        128: (4, 4, 8),
        256: (4, 8, 8),
        512: (8, 8, 8),
        1024: (8, 8, 16),
        2048: (8, 16, 16),
        4096: (16, 16, 16),
        6144: (16, 16, 24),
    },
}
SOURCES = {
    "v5e": (
        "Google Cloud's TPU v5e documentation (Configurations: the 2D slice shapes)",
        "https://cloud.google.com/tpu/docs/v5e",
    ),
    "v5p": (
        "Google Cloud's TPU v5p documentation (Configurations: the single-slice shapes)",
        "https://cloud.google.com/tpu/docs/v5p",
    ),
}
# How make_mesh places a mesh on each chip's slices: "split" (any mesh: it splits a side
# between axes where it must), "whole sides" (each axis of more than one chip is the
# product of a set of the slice's sides, no side in two sets).
RULES = {"v5e": "split", "v5p": "whole sides"}


def shape_of(chip: str, devices: int) -> tuple[int, ...] | None:
    """The published slice shape of `devices` chips of `chip`, or None: not a TPU chip the
    planner knows slices of, or a count with no published shape."""
    return SLICES.get(chip, {}).get(devices)


def meshes(devices: int) -> list[tuple[int, int, int]]:
    """Every (data, fsdp, tensor) mesh of `devices`, data then fsdp ascending."""
    return [
        (a, f, devices // (a * f))
        for a in range(1, devices + 1)
        if devices % a == 0
        for f in range(1, devices // a + 1)
        if devices // a % f == 0
    ]


def axis_sizes(shape: tuple[int, ...]) -> list[int]:
    """The sizes a mesh axis may have under "whole sides": the products of the sets of
    the slice's sides, 1 aside, smallest first."""
    found = {
        math.prod(c)
        for k in range(1, len(shape) + 1)
        for c in itertools.combinations(shape, k)
    }
    return sorted(found - {1})


def _whole_sides(shape: tuple[int, ...], mesh: tuple[int, ...]) -> bool:
    """Whether the slice's sides can be dealt to the mesh's axes, each side to one axis,
    so that each axis gets the product of its sides (a side of 1 goes anywhere)."""
    for deal in itertools.product(range(len(mesh)), repeat=len(shape)):
        got = [1] * len(mesh)
        for side, axis in zip(shape, deal, strict=True):
            got[axis] *= side
        if tuple(got) == tuple(mesh):
            return True
    return False


def accepts(chip: str, devices: int, mesh: tuple[int, ...]) -> bool | None:
    """Whether make_mesh builds `mesh` on the published slice of `devices` chips of
    `chip`; None where there is no published slice to check it against."""
    shape = shape_of(chip, devices)
    if shape is None:
        return None
    if math.prod(mesh) != devices:
        raise ValueError(f"a mesh of {devices} devices, not {mesh}")
    if RULES[chip] == "split":
        return True
    return _whole_sides(shape, mesh)


# What the planner says, as templates (str.format's {name}; the script fills the same).
WORDS = {
    # a greyed row: the mesh make_mesh refuses, and the meshes of its kind it builds
    "refused": "jax.make_mesh gives each axis whole sides of the {shape} {chip} slice, "
    "no side to two axes (an axis of {sizes} chips): use {kind} {meshes}",
    "no kind": "jax.make_mesh gives each axis whole sides of the {shape} {chip} slice, "
    "no side to two axes (an axis of {sizes} chips), and no {kind} mesh of {devices} "
    "chips has that: split fewer axes",
    # ... where it builds meshes of that kind, but none of them splits the model
    "none splits": "jax.make_mesh gives each axis whole sides of the {shape} {chip} "
    "slice, no side to two axes (an axis of {sizes} chips); the {kind} meshes it builds "
    "({meshes}) cannot split this model: split other axes",
    # above the table, for a TPU chip
    "split": "{label}, {devices} chips: the {shape} slice Google publishes, on which "
    "jax.make_mesh builds every mesh (it splits a side between axes where it must)",
    "every": "{label}, {devices} chips: the {shape} slice Google publishes, on which "
    "jax.make_mesh builds every mesh (each axis gets whole sides of it)",
    "sides": "{label}, {devices} chips: the {shape} slice Google publishes, on which "
    "jax.make_mesh refuses {refused} of the {meshes} meshes (greyed, each saying what "
    "to use); pipelines not checked",
    "unpublished": "{label}, {devices} chips: Google publishes no slice of {devices} "
    "chips, so no mesh is checked against jax.make_mesh",
}
LABELS = {"v5e": "TPU v5e", "v5p": "TPU v5p"}


def shape_text(shape) -> str:
    return " x ".join(map(str, shape))


def either(items: list[str]) -> str:
    """`a`, `a or b`, `a, b or c`."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def alternatives(chip: str, devices: int, mesh: tuple[int, int, int]) -> list:
    """The meshes with the same axes split as `mesh` that make_mesh builds on the
    published slice, in `meshes` order."""
    split = [k > 1 for k in mesh]
    return [
        m
        for m in meshes(devices)
        if [k > 1 for k in m] == split and accepts(chip, devices, m)
    ]


def refusal(
    chip: str,
    devices: int,
    mesh: tuple[int, int, int],
    splits: Callable[[tuple[int, int, int]], bool] | None = None,
) -> str | None:
    """Why make_mesh refuses `mesh` on the published slice, and the meshes with the same
    axes split that it builds there, of those only the ones `splits` says can split the
    model (None: it builds this one, or no slice is known)."""
    if accepts(chip, devices, mesh) is not False:
        return None
    shape = shape_of(chip, devices)
    split = [k > 1 for k in mesh]
    kind = " x ".join(name for name, s in zip(AXES, split, strict=True) if s)
    built = alternatives(chip, devices, mesh)
    same = [m for m in built if splits is None or splits(m)]

    def listed(found) -> str:
        return either([shape_text([k for k in m if k > 1]) for m in found])

    values = {
        "shape": shape_text(shape),
        "chip": chip,
        "sizes": either([str(n) for n in axis_sizes(shape)]),
        "kind": kind,
        "devices": devices,
        "meshes": listed(same or built) if built else "",
    }
    word = "refused" if same else "none splits" if built else "no kind"
    return WORDS[word].format(**values)


def note(chip: str, devices: int) -> str | None:
    """What the planner says above the table about the slice (None: not a TPU chip)."""
    if chip not in SLICES:
        return None
    shape = shape_of(chip, devices)
    values = {"label": LABELS[chip], "devices": devices}
    if shape is None:
        return WORDS["unpublished"].format(**values)
    every = meshes(devices)
    refused = sum(not accepts(chip, devices, m) for m in every)
    values |= {"shape": shape_text(shape), "refused": refused, "meshes": len(every)}
    if refused:
        return WORDS["sides"].format(**values)
    return WORDS["split" if RULES[chip] == "split" else "every"].format(**values)


def data() -> dict:
    """What the script checks a mesh with (planner_page.data_json)."""
    return {
        "slices": {
            chip: {str(n): list(s) for n, s in table.items()}
            for chip, table in SLICES.items()
        },
        "rules": RULES,
        "words": WORDS,
        "labels": LABELS,
        "axes": AXES,
    }


# ------------------------------------------------ what make_mesh did (libtpu, no TPU)


def _first_sentence(message: str) -> str:
    return message.split(". ")[0].rstrip(".") + "."


def probe(chip: str, devices: int) -> dict:
    """make_mesh on every mesh of the published slice of `devices` chips of `chip`, with
    libtpu's compile-only devices of that topology."""
    import jax

    from docs_build.compiled import targets as tg

    shape = SLICES[chip][devices]
    topology = "x".join(map(str, shape))
    found = {"chip": chip, "devices": devices, "topology": topology}
    try:
        chips = tg.devices(f"{chip}:{topology}")
    except Exception as err:  # recorded: the rule is then unchecked for this slice
        return found | {"error": f"{type(err).__name__}: {err}"[:500]}
    found["device_kind"] = chips[0].device_kind
    found["accepted"], found["refused"] = [], []
    for mesh in meshes(devices):
        try:
            made = jax.make_mesh(mesh, AXES, devices=chips)
        except Exception as err:
            found["refused"].append(
                {
                    "mesh": list(mesh),
                    "error": type(err).__name__ + ": " + _first_sentence(str(err)),
                }
            )
        else:
            assert made.devices.shape == mesh
            found["accepted"].append(list(mesh))
    return found


def main(argv: list[str] | None = None) -> int:
    import datetime as dt
    import time

    from docs_build.compiled import records

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    slices = []
    for chip, table in SLICES.items():
        for devices in table:
            found = probe(chip, devices)
            slices.append(found)
            said = found.get("error") or (
                f"{len(found['accepted'])} accepted, {len(found['refused'])} refused"
            )
            print(f"{chip}:{found['topology']:<9} {devices:>5} {said}", flush=True)
    result = {
        "generated": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d"),
        "seconds": round(time.perf_counter() - started, 1),
        "versions": records.versions("tpu"),
        "axes": list(AXES),
        "slices": slices,
    }
    args.out.write_text(records.dump(result))
    return 1 if any("error" in s for s in slices) else 0


if __name__ == "__main__":
    raise SystemExit(main())
