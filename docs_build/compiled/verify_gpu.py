"""Check the committed GPU results against a real card: run on a machine with one NVIDIA GPU.

    python -m docs_build.compiled.verify_gpu [--programs N ...]

in an environment with `jax[cuda12]==<the pinned jax>` and this repository's examples group
(not CI: the build never needs a GPU). In under three minutes it compiles the one-node
programs of results/gpu.json (the training steps, the three approaches page's layer and the
advanced pages' programs) twice more, each in a process of its own:

1. `card spec`: without the GPU, as `nox -s gpu` does, but from this card's own spec
   (`get_topology_for_devices(jax.devices()[:1]).target_config`) instead of the spec file;
2. `autotuned`: on the GPU itself, through `JAX_MOCK_GPU_TOPOLOGY=1x1x8` (8 GPUs that are
   this one), so that XLA autotunes its kernels as it does for a real run.

It prints, per program, whether the collectives (kind, shapes, group size, runs) are the
committed ones, and how far each compile's temporaries are from the committed figure, then
exits non-zero if any collective differs. It compares with the committed target of the same
card (`h100:1x8`, `a100:1x8`), or with `h100:1x8` for another card, and says so.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from docs_build.compiled.driver import results_path

ROOT = Path(__file__).resolve().parents[2]
PER_NODE = 8
CARD_NAMES = {"H100": "h100", "A100": "a100"}


def _collectives(row: dict) -> list[tuple]:
    return sorted(
        (c["kind"], tuple(c["shapes"]), c["group_size"], c["runs"])
        for c in row["collectives"]
    )


def _programs() -> dict[str, dict]:
    """name -> builders of every one-node program the GPU results hold."""
    from docs_build.compiled import advanced, steps

    return steps.STRATEGIES | steps.APPROACHES | advanced.PROGRAMS


def _compile_all(devices: list, names: list[str], out: Path) -> None:
    """Compile each named program for `devices`; write {name: {collectives, temp}}."""
    from docs_build import hlo
    from docs_build.compiled import records

    programs, found = _programs(), {}
    for name in names:
        started = time.perf_counter()
        try:
            compiled = programs[name](devices).compile()
            read = hlo.read(compiled.as_text())
            found[name] = {
                "collectives": [c.as_record() for c in read.collectives],
                "temp_bytes": records.memory(compiled)["temp_bytes"],
                "seconds": round(time.perf_counter() - started, 2),
            }
        except Exception as err:  # recorded, and reported as a difference
            found[name] = {"error": f"{type(err).__name__}: {err}"[:500]}
    out.write_text(json.dumps(found))


def _stage(argv: list[str]) -> int:
    """One compile pass, in this process (started by `main` with its environment)."""
    kind, names_file, out = argv[0], Path(argv[1]), Path(argv[2])
    names = json.loads(names_file.read_text())
    if kind == "spec":
        from docs_build.compiled import targets as tg

        spec = Path(argv[3]).read_text()
        devices = tg.gpu_devices(spec, 1, PER_NODE)
    else:
        import jax

        devices = jax.devices()
        if len(devices) != PER_NODE or devices[0].platform != "gpu":
            sys.exit(
                f"JAX_MOCK_GPU_TOPOLOGY gave {len(devices)} {devices[0].platform} devices, "
                f"not {PER_NODE} GPUs: is this jax[cuda12] at the pinned version?"
            )
    _compile_all(devices, names, out)
    return 0


def _card() -> tuple[str, str, str]:
    """(this GPU's name, its spec text, the committed target to compare with)."""
    import jax

    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    if not gpus:
        sys.exit(
            "no GPU: run this on a machine with an NVIDIA GPU, in an environment with "
            "jax[cuda12] at the pinned version (the committed results need no GPU)"
        )
    from jax._src.lib import _jax

    spec = _jax.get_topology_for_devices(gpus[:1]).target_config
    kind = gpus[0].device_kind
    card = next((c for n, c in CARD_NAMES.items() if n in kind), None)
    return kind, spec, f"{card or 'h100'}:1x8"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--programs", nargs="+", help="only these programs")
    parser.add_argument("--stage", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.stage:
        return _stage(args.stage)
    started = time.perf_counter()
    kind, spec, target = _card()
    committed = json.loads(results_path("gpu").read_text())
    rows = {
        p["strategy"]: p
        for key in ("programs", "approaches", "advanced")
        for p in (committed[key] if key == "programs" else committed[key]["programs"])
        if p["target"] == target and "error" not in p
    }
    names = [n for n in (args.programs or rows) if n in rows]
    print(f"{kind}: compared with the committed {target} programs ({len(names)})")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "names.json").write_text(json.dumps(names))
        (tmp / "spec.txtpb").write_text(spec)
        found = {}
        for stage, env in (
            ("spec", {"JAX_PLATFORMS": "cpu"}),
            ("autotuned", {"JAX_MOCK_GPU_TOPOLOGY": f"1x1x{PER_NODE}"}),
        ):
            out = tmp / f"{stage}.json"
            command = [
                sys.executable,
                "-m",
                "docs_build.compiled.verify_gpu",
                "--stage",
            ]
            command += ["spec" if stage == "spec" else "mock", str(tmp / "names.json")]
            command += [str(out), str(tmp / "spec.txtpb")]
            proc = subprocess.run(command, cwd=ROOT, env={**os.environ, **env})
            if proc.returncode or not out.exists():
                print(f"{stage}: the compile process failed (exit {proc.returncode})")
                return 1
            found[stage] = json.loads(out.read_text())
    differ = 0
    print(f"{'program':<38} {'card spec':<22} {'autotuned':<22}")
    for name in names:
        cells = []
        for stage in ("spec", "autotuned"):
            got = found[stage][name]
            if "error" in got:
                cells.append("ERROR " + got["error"][:14])
                differ += 1
                continue
            same = _collectives(got) == _collectives(rows[name])
            differ += not same
            base = rows[name]["memory"]["temp_bytes"]
            delta = (got["temp_bytes"] - base) / base if base else 0.0
            cells.append(
                f"{'same' if same else 'DIFFERENT'} collectives, temp {delta:+.1%}"
            )
        print(f"{name:<38} {cells[0]:<22} {cells[1]:<22}")
    seconds = time.perf_counter() - started
    print(
        f"{differ} differences in {len(names)} programs x 2 compiles, {seconds:.0f} s"
    )
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
