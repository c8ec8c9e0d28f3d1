"""Write the compiled-HLO excerpts that tests/docs_build/test_hlo.py reads the reader against.

    python -m docs_build.compiled.fixtures        (in the `nox -s tpu` environment: needs libtpu)

Each fixture is a real program compiled here, one per spelling or feature the reader must
handle, trimmed to stay small: the debug tables (FileNames ... StackFrames) and every
`metadata={...}` are dropped, and so are computations that hold no collective and no
matmul (what `hlo.in_flight` looks for) and are neither a loop's body or condition nor
called from one. Nothing else is edited. The tests
state what each fixture holds, worked out by hand, not by this reader.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax import P
from jax.sharding import AxisType, Mesh, NamedSharding

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "docs_build" / "fixtures"
DEBUG_TABLES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
COLLECTIVE = re.compile(
    r"\s(all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute)"
    r"(-start)?\(|AsyncCollective"
)
MATMUL = re.compile(r"\s(dot|convolution)\(")


def trim(text: str) -> str:
    """Drop debug tables, metadata and computations the reader has no use for."""
    lines, skipping = [], False
    for line in text.splitlines():
        if line in DEBUG_TABLES:
            skipping = True
        elif skipping and not line.strip():
            skipping = False
            continue
        if not skipping:
            lines.append(_without_metadata(line))
    blocks = _blocks(lines)
    loops = set()
    for _, body in blocks:
        for line in body:
            loops.update(re.findall(r"(?:body|condition)=%([\w.\-]+)", line))
    keep = set(loops)
    for name, body in blocks:
        if name in loops:  # what a loop's counter may pass through
            for line in body:
                keep.update(re.findall(r"calls=%([\w.\-]+)", line))
    out = []
    for name, body in blocks:
        if (
            name is None
            or name in keep
            or body[0].startswith("ENTRY")
            or any(COLLECTIVE.search(line) or MATMUL.search(line) for line in body)
        ):
            out.extend(body)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip() + "\n"


def _without_metadata(line: str) -> str:
    start = line.find(", metadata={")
    if start < 0:
        return line
    depth, end = 0, start + len(", metadata=")
    for i in range(end, len(line)):
        depth += {"{": 1, "}": -1}.get(line[i], 0)
        if depth == 0:
            return line[:start] + line[i + 1 :]
    return line


def _blocks(lines: list[str]) -> list[tuple[str | None, list[str]]]:
    """(computation name or None, its lines), in order."""
    blocks, current, name = [], [], None
    for line in lines:
        head = re.match(r"^(?:ENTRY\s+)?%([\w.\-]+)\s*\(.*\{\s*$", line)
        if head and name is None:
            if current:
                blocks.append((None, current))
            current, name = [line], head.group(1)
        elif name is not None:
            current.append(line)
            if line.strip() == "}":
                blocks.append((name, [*current, ""]))
                current, name = [], None
        else:
            current.append(line)
    if current:
        blocks.append((name, current))
    return blocks


def compiled_text(fn, mesh: Mesh, in_specs, out_specs, *shapes) -> str:
    mapped = jax.jit(
        jax.shard_map(
            fn, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=False
        )
    )
    args = [
        jax.ShapeDtypeStruct(s, jnp.float32, sharding=NamedSharding(mesh, spec))
        for s, spec in zip(shapes, in_specs, strict=True)
    ]
    return mapped.lower(*args).compile().as_text()


def cpu_shard_map() -> str:
    """Every collective on a 2x2x2 CPU mesh, groups in the mesh spelling."""
    mesh = Mesh(np.array(jax.devices()[:8]).reshape(2, 2, 2), ("a", "b", "c"))

    def f(x):
        summed = jax.lax.psum(x, "b")
        both = jax.lax.psum(x, ("c", "a"))
        pair = jax.lax.psum((x, 2 * x), "a")
        gathered = jax.lax.all_gather(x, "a", tiled=True)
        scattered = jax.lax.psum_scatter(x, "c", scatter_dimension=0, tiled=True)
        swapped = jax.lax.all_to_all(x, "b", 0, 0, tiled=True)
        shifted = jax.lax.ppermute(x, "c", [(0, 1), (1, 0)])
        return summed, both, pair, gathered, scattered, swapped, shifted

    spec = P(("a", "b", "c"))
    return compiled_text(f, mesh, (spec,), spec, (64, 16))


def cpu_loops() -> str:
    """psum in a scan of 4; all_gather in a fori_loop of 3 inside a fori_loop of 5."""
    mesh = Mesh(np.array(jax.devices()[:8]), ("x",))

    def f(x):
        def scan_body(c, _):
            return c + jax.lax.psum(c, "x"), None

        x, _ = jax.lax.scan(scan_body, x, None, length=4)

        def inner(_, c):
            return c + jax.lax.all_gather(c, "x", tiled=True)[: c.shape[0]]

        return jax.lax.fori_loop(
            0, 5, lambda _, c: jax.lax.fori_loop(0, 3, inner, c), x
        )

    return compiled_text(f, mesh, (P("x"),), P("x"), (64, 16))


def tpu_devices(topology: str) -> list:
    from docs_build.compiled.targets import devices

    return devices(topology)


def tpu_shard_map(topology: str = "v5e:2x4") -> str:
    """On a TPU: async permute and all-to-all pairs, loops without known_trip_count."""
    devices = tpu_devices(topology)
    mesh = Mesh(np.array(devices).reshape(2, -1), ("x", "y"))

    def f(x):
        shifted = jax.lax.ppermute(x, "y", [(i, (i + 1) % 4) for i in range(4)])
        swapped = jax.lax.all_to_all(x, "y", 0, 0, tiled=True)
        scattered = jax.lax.psum_scatter(x, "y", scatter_dimension=0, tiled=True)
        pair = jax.lax.psum((x, 2 * x), "x")
        gathered = jax.lax.all_gather(x, ("x", "y"), tiled=True)

        def outer(c, _):
            def inner(c, _):
                return c + jax.lax.psum(c, "y"), None

            c, _ = jax.lax.scan(inner, c, None, length=3)
            return 2 * c, None

        looped, _ = jax.lax.scan(outer, x, None, length=4)
        return shifted, swapped, scattered, pair, gathered, looped

    return compiled_text(f, mesh, (P("x", "y"),), P("x"), (256, 1024))


def tpu_iota(topology: str = "v5e:2x4") -> str:
    """Partitioner-made all-reduces over each axis of a (2, 4) mesh: iota groups."""
    devices = tpu_devices(topology)
    mesh = jax.make_mesh(
        (2, 4), ("data", "model"), axis_types=(AxisType.Auto,) * 2, devices=devices
    )

    def f(a, b, c):
        over_data = a @ b  # contracting dimension split over "data": the major axis
        over_model = a.T @ c  # ... over "model": the minor axis
        return over_data, over_model

    def shaped(shape, spec):
        return jax.ShapeDtypeStruct(
            shape, jnp.float32, sharding=NamedSharding(mesh, spec)
        )

    out = (NamedSharding(mesh, P("model", None)), NamedSharding(mesh, P("data", None)))
    lowered = jax.jit(f, out_shardings=out).lower(
        shaped((256, 1024), P("model", "data")),
        shaped((1024, 512), P("data", None)),
        shaped((256, 512), P("model", None)),
    )
    return lowered.compile().as_text()


def tpu_fsdp_step(topology: str = "v5e:2x4") -> str:
    """The choosing page's FSDP step: async all-gather chains, all-reduce-scatter."""
    from docs_build.compiled import steps

    return steps.STRATEGIES["FSDP"](tpu_devices(topology)).compile().as_text()


def tpu_multislice_step(topology: str = "2 slices of v5e:2x4") -> str:
    """Data parallelism over two slices: ICI collectives, and megascale sends over DCN."""
    from docs_build.compiled import steps

    devices = tpu_devices(topology)
    return steps.HYBRID_STRATEGIES["data parallel"](devices).compile().as_text()


def tpu_ring_matmul(topology: str = "v5e:2x4") -> str:
    """x @ w with x's row blocks passed round a ring of ppermutes, one matmul per stop:
    asynchronous permutes, and fusions holding matmuls scheduled between some of them."""
    devices = tpu_devices(topology)
    mesh = Mesh(np.array(devices), ("x",))
    n = len(devices)

    def f(x, w):
        me = jax.lax.axis_index("x")
        rows = x.shape[0]
        out = jax.lax.pcast(
            jnp.zeros((rows * n, w.shape[1]), x.dtype), "x", to="varying"
        )
        held = x
        for hop in range(n):
            product = held @ w
            out = jax.lax.dynamic_update_slice_in_dim(
                out, product, ((me - hop) % n) * rows, 0
            )
            if hop < n - 1:
                held = jax.lax.ppermute(held, "x", [(i, (i + 1) % n) for i in range(n)])
        return out

    mapped = jax.jit(
        jax.shard_map(
            f, mesh=mesh, in_specs=(P("x", None), P(None, "x")), out_specs=P(None, "x")
        )
    )
    args = [
        jax.ShapeDtypeStruct(
            (4096, 4096), jnp.bfloat16, sharding=NamedSharding(mesh, s)
        )
        for s in (P("x", None), P(None, "x"))
    ]
    return mapped.lower(*args).compile().as_text()


def tpu_xla_collective_matmul(topology: str = "v5e:2x4") -> str:
    """The overlap page's `sharded_matmul` with libtpu's collective matmul asked for, as
    the results compile it: permutes both ways round the ring, in a loop."""
    from docs_build.compiled import advanced

    program = advanced.PROGRAMS["XLA collective matmul"]
    return program(tpu_devices(topology)).compile().as_text()


FIXTURE_PROGRAMS = {
    "cpu_shard_map.hlo": (cpu_shard_map, None),
    "cpu_loops.hlo": (cpu_loops, None),
    # libtpu reads its flags once, at start: this one is compiled in a process of its own.
    "tpu_v5e_2x4_shard_map.hlo": (
        tpu_shard_map,
        "--xla_tpu_enable_async_all_to_all=true",
    ),
    "tpu_v5e_2x4_iota.hlo": (tpu_iota, None),
    "tpu_v5e_2x4_fsdp_step.hlo": (tpu_fsdp_step, None),
    "tpu_2_slices_v5e_2x4_dp_step.hlo": (tpu_multislice_step, None),
    "tpu_v5e_2x4_ring_matmul.hlo": (tpu_ring_matmul, None),
    "tpu_v5e_2x4_xla_collective_matmul.hlo": (tpu_xla_collective_matmul, None),
}


def main(argv: list[str]) -> int:
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    FIXTURES.mkdir(parents=True, exist_ok=True)
    names = argv or list(FIXTURE_PROGRAMS)
    for name in names:
        make, flags = FIXTURE_PROGRAMS[name]
        if flags and os.environ.get("LIBTPU_INIT_ARGS") != flags:
            env = {**os.environ, "LIBTPU_INIT_ARGS": flags}
            command = [sys.executable, "-m", "docs_build.compiled.fixtures", name]
            subprocess.run(command, check=True, env=env, cwd=ROOT)
            continue
        text = trim(make())
        (FIXTURES / name).write_text(text)
        print(f"{name}: {len(text):,} characters")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
