"""The targets the site compiles for, and their devices, described without the hardware.

Three families share one driver (`driver.py`), one HLO reader (`docs_build/hlo.py`) and one
results format (`results/<family>.json`):

- `cpu`: the 8 virtual CPU devices the pages run on;
- `tpu`: a TPU topology as libtpu names it (`v5e:2x4`), or several slices of one joined by
  the data-center network (`2 slices of v5e:2x4`);
- `gpu`: NVIDIA nodes as `CARD:NODESxGPUS` (`h100:1x8`: one node of 8 H100s joined by
  NVLink; `h100:2x8`: two such nodes joined by InfiniBand), described by the card's spec file
  in `specs/`; `2 nodes of h100:1x8` is the same 16 GPUs laid out as a hybrid mesh, one
  mesh axis across the nodes and one within them.

Nothing here needs the hardware: `devices(target)` returns compile-only devices that
`jax.jit(...).trace(...).lower().compile()` compiles for.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
SPECS = HERE / "specs"
CPU_DEVICES = 8


@dataclass(frozen=True)
class Family:
    """A backend's targets, by what is compiled for them."""

    name: str
    # The training strategies (steps.STRATEGIES) for each of these.
    targets: tuple[str, ...]
    # Several slices or nodes, for the hybrid strategies (steps.HYBRID_STRATEGIES).
    multi: tuple[str, ...]
    # The three approaches page's layer, and the advanced pages' programs: 8 devices only.
    approaches: tuple[str, ...]
    advanced: tuple[str, ...]
    # The links within a slice or node and the network between them, as results.json
    # names them in each collective's "network".
    within: str | None = None
    between: str | None = None
    # The training steps again under XLA options of this backend (steps.OPTION_PROGRAMS).
    options: tuple[str, ...] = ()


FAMILIES = {
    "cpu": Family("cpu", ("cpu",), (), ("cpu",), ("cpu",)),
    "tpu": Family(
        "tpu",
        ("v5e:2x4", "v5p:2x2x2", "v5e:8x8", "v5e:16x16"),
        ("2 slices of v5e:2x4", "4 slices of v5e:4x4"),
        ("v5e:2x4", "v5p:2x2x2"),
        ("v5e:2x4", "v5p:2x2x2"),
        within="ici",
        between="dcn",
    ),
    "gpu": Family(
        "gpu",
        ("h100:1x8", "a100:1x8", "h100:2x8", "h100:8x8"),
        ("2 nodes of h100:1x8",),
        ("h100:1x8",),
        ("h100:1x8",),
        within="nvlink",
        between="ib",
        options=("h100:1x8",),
    ),
}

# The card names of GPU targets, and their spec files.
CARDS = {"h100": "h100_sxm", "a100": "a100_sxm_80"}
# What the compile needs from a spec (gpu_device_info's fields, then the top level's).
SPEC_FIELDS = (
    "threads_per_block_limit",
    "threads_per_warp",
    "shared_memory_per_block",
    "shared_memory_per_core",
    "threads_per_core_limit",
    "core_count",
    "fpus_per_core",
    "block_dim_limit_x",
    "block_dim_limit_y",
    "block_dim_limit_z",
    "memory_bandwidth",
    "l2_cache_size",
    "clock_rate_ghz",
    "device_memory_size",
    "shared_memory_per_block_optin",
    "cuda_compute_capability",
    "registers_per_core_limit",
    "registers_per_block_limit",
    "platform_name",
    "dnn_version_info",
    "runtime_version",
    "device_description_str",
)

MULTI = re.compile(r"(\d+) (slices|nodes) of (\S+)")
GPU = re.compile(r"([a-z]\d+):(\d+)x(\d+)")


class TargetError(ValueError):
    """A target name, or a spec file, that cannot be compiled for."""


def family(target: str) -> str:
    """`cpu`, `tpu` or `gpu`: which family a target name belongs to."""
    if match := MULTI.fullmatch(target):
        return "tpu" if match.group(2) == "slices" else "gpu"
    if target == "cpu":
        return "cpu"
    if GPU.fullmatch(target) and target.split(":")[0] in CARDS:
        return "gpu"
    if re.fullmatch(r"v\d\w*:\d+(x\d+)+", target):
        return "tpu"
    raise TargetError(
        f"unknown target {target!r}: use cpu, a TPU topology (v5e:2x4), N slices of one, "
        f"a GPU node layout {'/'.join(CARDS)}:NODESxGPUS (h100:1x8), or N nodes of one"
    )


def card(target: str) -> str:
    """The GPU card of a GPU target (`h100`)."""
    if match := MULTI.fullmatch(target):
        target = match.group(3)
    return target.split(":")[0]


def nodes(target: str) -> tuple[int, int]:
    """(nodes, GPUs per node) of a GPU target."""
    if match := MULTI.fullmatch(target):
        per = GPU.fullmatch(match.group(3))
        if per is None or int(per.group(2)) != 1:
            raise TargetError(
                f"{target!r}: N nodes of a one-node layout, as in 2 nodes of h100:1x8"
            )
        return int(match.group(1)), int(per.group(3))
    match = GPU.fullmatch(target)
    if match is None:
        raise TargetError(f"{target!r} is not a GPU target such as h100:1x8")
    return int(match.group(2)), int(match.group(3))


def spec_text(name: str) -> str:
    """A card's spec (GpuTargetConfigProto text), checked for every field the compile
    needs. A missing field stops here, named, instead of deep inside XLA."""
    path = SPECS / f"{CARDS.get(name, name)}.txtpb"
    if not path.exists():
        raise TargetError(
            f"no spec file for GPU card {name!r}: expected {path.relative_to(HERE.parents[1])}"
        )
    text = path.read_text(encoding="utf-8")
    body = "\n".join(line.split("#")[0] for line in text.splitlines())
    for field in SPEC_FIELDS:
        if not re.search(rf"\b{field}\s*[:{{]", body):
            raise TargetError(
                f"{path.name} has no {field}: every GPU spec needs "
                f"{', '.join(SPEC_FIELDS)}"
            )
    return text


def spec_value(name: str, field: str) -> float:
    """One numeric field of a card's spec (`device_memory_size`, `memory_bandwidth`)."""
    body = "\n".join(line.split("#")[0] for line in spec_text(name).splitlines())
    match = re.search(rf"\b{field}:\s*([0-9.]+)", body)
    if match is None:
        raise TargetError(f"the {name} spec has no numeric field {field}")
    return float(match.group(1))


# What libtpu prints when it starts on a machine that is not a TPU VM. Only these lines
# are dropped; anything else it writes reaches stderr.
LIBTPU_NOISE = (
    re.compile(r"TPU_ACCELERATOR_TYPE"),
    re.compile(r"TPU_WORKER_HOSTNAMES"),
    re.compile(r"^WARNING: Logging before InitGoogle\(\) is written to STDERR$"),
)
TRACE = re.compile(r"^=== Source Location Trace: ===\s*$")
TRACE_LINE = re.compile(r"^[\w./-]+\.(cc|h|cpp):\d+\s*$")


def without_libtpu_noise(text: str) -> str:
    """`text` less libtpu's warnings about TPU_* variables (and their source traces)."""
    kept, dropping = [], False
    for line in text.splitlines():
        if any(p.search(line) for p in LIBTPU_NOISE):
            dropping = True  # a trace that follows belongs to this warning
            continue
        if dropping and (TRACE.match(line) or TRACE_LINE.match(line)):
            continue
        dropping = False
        kept.append(line)
    return "\n".join(kept) + ("\n" if kept else "")


@contextlib.contextmanager
def libtpu_quiet() -> Iterator[None]:
    """Capture what native code writes to stderr, and pass on all but libtpu's noise.

    libtpu writes with C++ streams, under Python's sys.stderr, so file descriptor 2 is
    redirected, not the Python object.
    """
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            sys.stderr.write(
                without_libtpu_noise(captured.read().decode(errors="replace"))
            )
            sys.stderr.flush()


def devices(target: str) -> list:
    """The target's devices: this process's CPU devices, or compile-only TPU or GPU ones."""
    import jax

    kind = family(target)
    if kind == "cpu":
        return jax.devices("cpu")[:CPU_DEVICES]
    from jax.experimental import topologies

    if kind == "gpu":
        if os.environ.get("JAX_PLATFORMS") != "cpu":
            raise TargetError(
                "GPU targets need JAX_PLATFORMS=cpu set before JAX starts: without it the "
                "CUDA plugin looks for a GPU (cuInit fails) and describes no topology"
            )
        count, per_node = nodes(target)
        return gpu_devices(spec_text(card(target)), count, per_node, target)
    options = {}
    name = target
    if match := MULTI.fullmatch(target):
        options["num_slices"] = int(match.group(1))
        name = match.group(3)
    with libtpu_quiet():
        topology = topologies.get_topology_desc(
            platform="tpu", topology_name=name, **options
        )
    return list(topology.devices)


def gpu_devices(spec: str, count: int, per_node: int, target: str = "") -> list:
    """Compile-only GPUs: `count` nodes of `per_node`, each the card `spec` describes."""
    from jax.experimental import topologies

    try:
        topology = topologies.get_topology_desc(
            platform="cuda", target_config=spec, topology=f"{count}x1x{per_node}"
        )
    except (ValueError, RuntimeError) as err:
        raise TargetError(
            f"{target or 'GPU'}: no GPU topology ({err}). Is jax-cuda12-plugin installed "
            "at the pinned JAX version? `nox -s gpu` installs it."
        ) from err
    return list(topology.devices)


def describe(target: str, found: list) -> dict:
    """What results.json says about a target's devices."""
    first = found[0]
    said = {
        "devices": len(found),
        "device_kind": first.device_kind,
        "platform": first.platform,
        "family": family(target),
    }
    if MULTI.fullmatch(target) and family(target) == "tpu":
        said["slices"] = len({d.slice_index for d in found})
    if family(target) == "gpu":
        count, per_node = nodes(target)
        said |= {
            "nodes": count,
            "gpus_per_node": per_node,
            "card": card(target),
            "memory_bytes": int(spec_value(card(target), "device_memory_size")),
        }
    return said


def networks(target: str, records: list[dict], groups: list, mesh) -> None:
    """Say which links each collective crosses: within one slice or node, or between.

    TPU: libtpu compiles a multi-slice program for one slice; what crosses between slices
    is a megascale host transfer, which the HLO reader already marks "dcn", and the rest
    stays on the slice's ICI. GPU: one program spans every node, so a collective is "ib"
    when one of its replica groups (or permute pairs) holds GPUs of two nodes, and
    "nvlink" when every group stays within a node. Replica groups number the mesh's
    devices in order (partition ids), so a partition's node is its mesh device's
    process_index."""
    kind = family(target)
    spec = FAMILIES[kind]
    if kind == "tpu":
        for r in records:
            r["network"] = r["network"] or spec.within
        return
    if kind != "gpu":
        return
    node = [d.process_index for d in mesh.devices.flat]
    for r, members in zip(records, groups, strict=True):
        crosses = any(len({node[i] for i in group}) > 1 for group in members)
        r["network"] = spec.between if crosses else spec.within
