"""Check the committed GPU results against a real card: run on a machine with one NVIDIA GPU.

    python -m docs_build.compiled.verify_gpu [--programs N ...] [--out card.json]

in an environment with the CUDA plugin at the pinned jax (`jax-cuda12-plugin` or
`jax-cuda13-plugin`, whichever the card's driver takes) and this repository's examples group
(not CI: the build never needs a GPU). It compiles the one-node programs of results/gpu.json
(the training steps, the three approaches page's layer and the advanced pages' programs) three
times more, each in a process of its own:

1. `file spec`: without the GPU, from the committed spec file, exactly as `nox -s gpu` does
   (what differs here comes from this machine's plugin, not from the card);
2. `card spec`: without the GPU, from this card's own spec
   (`get_topology_for_devices(jax.devices()[:1]).target_config`) instead of the spec file;
3. `8 nodes`: without the GPU, from the spec file, as 8 nodes of one GPU each;
4. `autotuned`: on the GPU itself, through the `jax_mock_gpu_topology` flag (8 GPUs that
   are this one), so that XLA autotunes its kernels as it does for a real run. It tries one
   host of 8 first; where that gives fewer devices, 8 hosts of one, and then this pass is
   held to the `8 nodes` pass: the same topology, with and without the card.

It prints, per program, whether the collectives (kind, shapes, group size, runs) are the
committed ones, and how far each compile's temporaries are from the committed figure, then
exits non-zero if any collective differs. It compares with the committed target of the same
card (`h100:1x8`, `a100:1x8`), or with `h100:1x8` for another card, and says so.

With `--out`, it also runs, on the one real GPU, what a reader meets there (`_probe`): the
out-of-memory errors of an eager and a jitted allocation larger than the card, a bf16
matrix product's speed, and the transformer page's train step timed on one GPU beside its
compiled FLOPs; and it writes everything to one JSON record (results/gpu_card.json is the
committed one) with the card, its driver and the versions that made it.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
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
STAGES = ("file spec", "card spec", "8 nodes", "autotuned")
# the pass each one is compared with: the committed programs, or another pass
BASELINE = {"autotuned": "8 nodes"}
# The mocked topologies to try, slices x hosts x GPUs per host: one host of 8, as committed,
# else 8 hosts of one (held to the `8 nodes` pass, the same topology without the card).
MOCKS = (f"1x1x{PER_NODE}", f"1x{PER_NODE}x1")
# The probe's sizes: an eager array and a jitted result each larger than an 80 GiB card, and
# a bf16 product big enough to keep the tensor cores busy.
TOO_BIG = 2**35  # float32 elements: 128 GiB
OUTER = 200_000  # jnp.outer of this many float32 values: 149 GiB
MATMUL = 8192
TIMED = 10


def collectives(row: dict) -> list[tuple]:
    return sorted(
        (c["kind"], tuple(c["shapes"]), c["group_size"], c["runs"])
        for c in row["collectives"]
    )


def committed_rows(committed: dict, target: str) -> dict[str, dict]:
    """name -> the one-node program of a GPU results file (`committed`) for `target`."""
    return {
        p["strategy"]: p
        for key in ("programs", "approaches", "advanced")
        for p in (committed[key] if key == "programs" else committed[key]["programs"])
        if p["target"] == target and "error" not in p
    }


def _programs() -> dict[str, dict]:
    """name -> builders of every one-node program the GPU results hold."""
    from docs_build.compiled import advanced, steps

    return steps.STRATEGIES | steps.APPROACHES | advanced.PROGRAMS


def _compile_all(devices: list, names: list[str], out: Path) -> None:
    """Compile each named program for `devices`; write {name: {collectives, temp}} after
    each one, so that a pass stopped half way still leaves what it found."""
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
        print(f"  {name}: {time.perf_counter() - started:.1f} s", flush=True)


def _error(err: BaseException) -> dict:
    return {"type": type(err).__name__, "message": str(err)[:3000]}


def _probe(out: Path) -> None:
    """What a reader meets on the one real GPU (run without a mocked topology)."""
    import jax
    import jax.numpy as jnp

    found: dict = {"device": jax.devices()[0].device_kind}

    def save():
        out.write_text(json.dumps(found, indent=1))

    # 1. An eager array larger than the card.
    try:
        jnp.zeros((TOO_BIG,), jnp.float32).block_until_ready()
        found["eager"] = {"raised": None}
    except Exception as err:
        found["eager"] = {"bytes": TOO_BIG * 4, **_error(err)}
    save()
    # 2. A jitted result larger than the card: when does the error come?
    outer = jax.jit(lambda v: jnp.outer(v, v))
    vector = jnp.ones((OUTER,), jnp.float32)
    record: dict = {"bytes": OUTER * OUTER * 4}
    stage = "compile"
    try:
        compiled = outer.lower(vector).compile()
        memory = compiled.memory_analysis()
        record["output_bytes"] = int(memory.output_size_in_bytes)
        record["temp_bytes"] = int(memory.temp_size_in_bytes)
        record["compiled"] = True
        stage = "call"
        result = compiled(vector)
        stage = "wait"
        result.block_until_ready()
        record["raised"] = None
    except Exception as err:
        record |= {"raised_at": stage, **_error(err)}
    found["jit"] = record
    del vector
    save()
    # 3. A bf16 matrix product: the speed the card reaches, beside its published peak.
    a = jax.random.normal(jax.random.key(0), (MATMUL, MATMUL), jnp.bfloat16)
    product = jax.jit(lambda x, y: x @ y)
    for _ in range(3):
        product(a, a).block_until_ready()
    started = time.perf_counter()
    for _ in range(TIMED):
        product(a, a).block_until_ready()
    seconds = (time.perf_counter() - started) / TIMED
    found["matmul"] = {
        "size": MATMUL,
        "dtype": "bfloat16",
        "seconds": seconds,
        "flops": 2 * MATMUL**3,
        "tflops": 2 * MATMUL**3 / seconds / 1e12,
    }
    save()
    # 4. The transformer page's train step, at the planner grid's "page" size, on one GPU.
    try:
        found["step"] = _time_step()
    except Exception as err:
        found["step"] = _error(err)
    save()


def one_device_step(config: str = "page", **fields):
    """The transformer page's train step at a planner grid size (`fields` replace the
    Config's), on a one-device mesh of the first device: (state, tokens, lowered step)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from docs_build.planner_grid import CONFIGS
    from snippets.advanced.transformer import init, model, step

    sizes, batch = CONFIGS[config]
    cfg = model.Config(**{**sizes, **fields})
    mesh = jax.make_mesh(
        (1, 1, 1),
        ("data", "fsdp", "tensor"),
        axis_types=(jax.sharding.AxisType.Auto,) * 3,
        devices=jax.devices()[:1],
    )
    sharded = init.sharded_init(cfg, mesh)
    tokens = jax.device_put(
        np.random.default_rng(0).integers(0, cfg.vocab, (batch, cfg.seq + 1)),
        jax.sharding.NamedSharding(mesh, model.mesh_axes(("batch", None))),
    ).astype(jnp.int32)
    train = step.make_train_step(sharded, mesh)
    return sharded.init(), tokens, train.lower(sharded.abstract, tokens)


def _time_step() -> dict:
    from docs_build.planner_grid import CONFIGS

    batch = CONFIGS["page"][1]
    state, tokens, lowered = one_device_step("page")
    compiled = lowered.compile()
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    losses = []
    for _ in range(3):
        state, loss = compiled(state, tokens)
        losses.append(float(loss))
    times = []
    for _ in range(TIMED):
        started = time.perf_counter()
        state, loss = compiled(state, tokens)
        loss.block_until_ready()
        times.append(time.perf_counter() - started)
    return {
        "config": "page",
        "batch": batch,
        "flops": float(cost.get("flops", 0.0)),
        "seconds": sorted(times)[len(times) // 2],
        "all_seconds": times,
        "losses": [*losses, float(loss)],
        "memory": {
            k: int(getattr(compiled.memory_analysis(), f"{k}_size_in_bytes"))
            for k in ("argument", "output", "temp")
        },
    }


def _stage(argv: list[str]) -> int:
    """One pass, in this process (started by `main` with its environment)."""
    kind, names_file, out = argv[0], Path(argv[1]), Path(argv[2])
    if kind == "probe":
        _probe(out)
        return 0
    names = json.loads(names_file.read_text())
    if kind == "spec":
        from docs_build.compiled import targets as tg

        spec = Path(argv[3]).read_text()
        devices = tg.gpu_devices(spec, 1, PER_NODE)
    elif kind == "nodes":
        from docs_build.compiled import targets as tg

        devices = tg.gpu_devices(Path(argv[3]).read_text(), PER_NODE, 1)
    else:
        import jax
        import jax.extend

        # a configuration flag, not an environment variable: jax reads no
        # JAX_MOCK_GPU_TOPOLOGY from the environment
        for topology in MOCKS:
            jax.config.update("jax_mock_gpu_topology", topology)
            try:
                devices = jax.devices()
                said = f"{len(devices)} {devices[0].platform} devices"
            except RuntimeError as err:
                devices, said = [], f"{type(err).__name__}: {err}"
            print(f"jax_mock_gpu_topology={topology}: {said}")
            if len(devices) == PER_NODE and devices[0].platform == "gpu":
                break
            jax.extend.backend.clear_backends()
        else:
            sys.exit(f"no mocked topology gave {PER_NODE} GPUs")
        Path(argv[3]).write_text(topology)
    _compile_all(devices, names, out)
    return 0


def _card() -> tuple[str, str, str]:
    """(this GPU's name, its spec text, the committed target to compare with)."""
    import jax

    try:
        gpus = [d for d in jax.devices() if d.platform == "gpu"]
    except RuntimeError:
        gpus = []
    if not gpus:
        sys.exit(
            "no GPU: run this on a machine with an NVIDIA GPU, in an environment with "
            "jax's CUDA plugin at the pinned version (the committed results need no GPU)"
        )
    from jax._src.lib import _jax

    try:
        spec = _jax.get_topology_for_devices(gpus[:1]).target_config
    except Exception as err:  # the card-spec pass is then skipped, and says why
        spec = f"# no spec from the card: {type(err).__name__}: {err}"
    kind = gpus[0].device_kind
    card = next((c for n, c in CARD_NAMES.items() if n in kind), None)
    return kind, spec, f"{card or 'h100'}:1x8"


def _machine() -> dict:
    """The card and software that made a record."""
    import importlib.metadata as md

    said: dict = {"date": dt.date.today().isoformat()}
    try:
        query = "name,driver_version,memory.total"
        line = subprocess.run(
            ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()[0]
        said |= dict(
            zip(
                ("name", "driver", "memory"),
                (x.strip() for x in line.split(",")),
                strict=False,
            )
        )
    except (OSError, subprocess.CalledProcessError, IndexError) as err:
        said["nvidia-smi"] = str(err)
    packages = ("jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda12-pjrt")
    packages += ("jax-cuda13-plugin", "jax-cuda13-pjrt", "flax", "optax")
    versions = {}
    for name in packages:
        with contextlib.suppress(md.PackageNotFoundError):
            versions[name] = md.version(name)
    said["versions"] = versions
    return said


def _run_stage(kind: str, tmp: Path, out: Path, env: dict) -> bool:
    command = [sys.executable, "-m", "docs_build.compiled.verify_gpu", "--stage"]
    command += [kind, str(tmp / "names.json"), str(out), str(tmp / f"{kind}.txtpb")]
    proc = subprocess.run(command, cwd=ROOT, env={**os.environ, **env})
    return proc.returncode == 0 and out.exists()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--programs", nargs="+", help="only these programs")
    parser.add_argument("--out", type=Path, help="write the whole record here")
    parser.add_argument("--stages", nargs="+", choices=STAGES, default=list(STAGES))
    parser.add_argument("--no-probe", dest="probe", action="store_false")
    parser.add_argument("--stage", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.stage:
        return _stage(args.stage)
    started = time.perf_counter()
    kind, card_spec, target = _card()
    committed = json.loads(results_path("gpu").read_text())
    rows = committed_rows(committed, target)
    # A program named on the command line that the committed results do not hold yet (one
    # added to the site, not yet compiled by `nox -s gpu`) is compiled and recorded, and
    # compared with nothing here: card.compare holds it to gpu.json once that has it.
    names = [n for n in (args.programs or rows) if n in rows or n in _programs()]
    print(f"{kind}: compared with the committed {target} programs ({len(names)})")
    from docs_build.compiled import targets as tg

    file_spec = tg.spec_text(tg.card(target))
    found: dict = {}
    baseline, mocked = dict(BASELINE), ""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "names.json").write_text(json.dumps(names))
        cpu = {"JAX_PLATFORMS": "cpu"}
        passes = {  # stage -> (the pass's kind, its spec file, its environment)
            "file spec": ("spec", file_spec, cpu),
            "card spec": ("spec", card_spec, cpu),
            "8 nodes": ("nodes", file_spec, cpu),
            "autotuned": ("mock", "", {}),
        }
        for stage in args.stages:
            kind_, spec, env = passes[stage]
            if spec.startswith("# no spec"):
                found[stage] = {n: {"error": spec[2:]} for n in names}
                continue
            out = tmp / "found.json"
            out.unlink(missing_ok=True)
            (tmp / f"{kind_}.txtpb").write_text(spec)
            ok = _run_stage(kind_, tmp, out, env)
            got = json.loads(out.read_text()) if out.exists() else {}
            if not ok:
                print(f"{stage}: the compile process failed; {len(got)} programs done")
            found[stage] = {
                n: got.get(n, {"error": "the compile process stopped first"})
                for n in names
            }
            if kind_ == "mock":
                mocked = (tmp / "mock.txtpb").read_text()
                print(f"{stage}: mocked topology {mocked}")
                if mocked == MOCKS[0]:
                    baseline.pop(stage)
        probe = {}
        if args.out and args.probe:
            out = tmp / "probe.json"
            _run_stage("probe", tmp, out, {})
            probe = json.loads(out.read_text()) if out.exists() else {}
    differ = 0
    compared: dict = {}
    print(f"{'program':<38} " + " ".join(f"{s:<28}" for s in args.stages))
    for name in names:
        if name not in rows:
            print(f"{name:<38} not in the committed results: recorded, not compared")
            continue
        cells, compared[name] = [], {}
        for stage in args.stages:
            got, base = found[stage][name], rows[name]
            if stage in baseline and baseline[stage] in found:
                base = found[baseline[stage]][name]
                base = {**base, "memory": {"temp_bytes": base.get("temp_bytes", 0)}}
            if "error" in got or "error" in base:
                error = got.get("error") or f"{baseline[stage]}: {base['error']}"
                cells.append("ERROR " + error[:22])
                compared[name][stage] = {"error": error}
                differ += 1
                continue
            same = collectives(got) == collectives(base)
            differ += not same
            temp = base["memory"]["temp_bytes"]
            delta = (got["temp_bytes"] - temp) / temp if temp else 0.0
            compared[name][stage] = {
                "compared_with": baseline.get(stage, "committed"),
                "same_collectives": same,
                "same_as_committed": collectives(got) == collectives(rows[name]),
                "temp_bytes": got["temp_bytes"],
                "compared_temp_bytes": temp,
                "seconds": got["seconds"],
            }
            cells.append(
                f"{'same' if same else 'DIFFERENT'} collectives, temp {delta:+.1%}"
            )
        print(f"{name:<38} " + " ".join(f"{c:<28}" for c in cells))
    seconds = time.perf_counter() - started
    print(
        f"{differ} differences in {len(names)} programs x {len(args.stages)} compiles, "
        f"{seconds:.0f} s"
    )
    if args.out:
        record = {
            "card": kind,
            "machine": _machine(),
            "compared_with": {
                "target": target,
                "versions": committed["versions"],
                "inputs": committed["inputs"],
            },
            "card_spec_is_file_spec": card_spec.strip() == file_spec.strip(),
            "card_spec": card_spec,
            "seconds": round(seconds, 1),
            "stages": args.stages,
            "mocked_topology": mocked,
            "programs": compared,
            "found": found,
            "probe": probe,
        }
        args.out.write_text(json.dumps(record, indent=1))
        print(f"record -> {args.out}")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
