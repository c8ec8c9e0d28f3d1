"""A lower bound on the time of one training step per device, from published peaks.

Bytes and FLOPs become seconds only against a chip's published figures (`costmodel.LINKS`,
each with its source), and only as a floor: every matrix unit busy at its dense peak, every
link sending at its full rate, nothing else in the way. A real step is slower.

- `compute_seconds`: FLOPs / the chip's published dense peak for a dtype.
- `network_seconds`: for each network (ICI and DCN on a TPU, NVLink and InfiniBand on a
  GPU), the bytes one device sends over it / that network's published rate.
- `Bound`: with no overlap the step takes at least compute + every network; with perfect
  overlap at least the largest of them. `mfu_bound` = compute / the perfect-overlap bound:
  the best model-FLOPs utilisation such a step could reach.

The FLOPs of the site's MLP step (`costmodel.MLP`, d -> hidden -> d, Adam) per device:

- matrix multiplications: 2 forward (x @ W1, h @ W2) and 3 backward (the gradients of W2,
  of h and of W1; none for the input, which is data, not a parameter), each 2 * rows * d *
  hidden: 10 * batch * d * hidden over the devices. The usual "6 * parameters * tokens"
  counts a sixth matmul, the input's gradient, that this step never computes.
- Adam: `ADAM_FLOPS` per parameter the device updates (the moments, their bias
  corrections, the step): 1% of the 8-device FSDP step's FLOPs, 8% of the data-parallel
  one's, and most of a 256-chip data-parallel step's.

tests/docs_build/test_steptime.py holds the sum to the compiled programs' `cost_analysis()`
FLOPs (CPU and TPU; the GPU compile reports none). The compute bound counts only the
matrix multiplications: the elementwise work runs on other units (a TPU's vector unit, a
GPU's CUDA cores) and can hide behind them, so leaving it out keeps the bound a floor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from docs_build import costmodel as cm

DTYPES = ("bfloat16", "float32")
MATMULS = 5  # forward 2, backward 3 (no gradient for the input)
ADAM_FLOPS = (
    14  # per parameter: mu 3, nu 4, bias corrections 2, the update 4, the add 1
)
# How far `training_flops` may be from a compiled program's cost_analysis() flops, as a
# fraction of it, on the 8-device targets (CPU, v5e:2x4, v5p:2x2x2), every strategy but
# the pipeline. On 64 and 256 chips libtpu chose other plans (FSDP assembling weights with
# all-reduces, whose additions it counts as FLOPs): there the formula is within
# `FLOPS_TOLERANCE_LARGE`.
FLOPS_TOLERANCE = 0.015
FLOPS_TOLERANCE_LARGE = 0.20
# A step slower than this at a chip's peak is a unit mistake (bytes for bits, a batch in
# tokens times a sequence twice), not a training step: refused, never clamped.
ABSURD_SECONDS = 24 * 3600.0
# The networks of each family, as results.json names them, and which of a chip's two
# published rates each one uses.
NETWORKS = {"ici": "within", "dcn": "between", "nvlink": "within", "ib": "between"}
FAMILY_NETWORKS = {"ICI": ("ici", "dcn"), "NVLink": ("nvlink", "ib")}


class StepTimeError(cm.CostModelError):
    """FLOPs, bytes, a chip or a dtype the bound cannot price."""


def chip(name: str) -> cm.Links:
    """A chip of costmodel.LINKS by its key (`v5e`, `v5p`, `h100`, `a100`)."""
    if name not in cm.LINKS:
        raise StepTimeError(f"unknown chip {name!r}: use one of {sorted(cm.LINKS)}")
    return cm.LINKS[name]


def peak(name: str, dtype: str = "bfloat16") -> float:
    """The chip's published dense matrix throughput for `dtype`, FLOP/s."""
    links = chip(name)
    if dtype not in DTYPES:
        raise StepTimeError(f"dtype must be one of {DTYPES}, not {dtype!r}")
    value = links.bf16_flops if dtype == "bfloat16" else links.f32_flops
    if value is None:
        raise StepTimeError(
            f"{links.source} publishes no {dtype} peak for {links.chip}: use bfloat16"
        )
    return value


def _finite(value: float, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise StepTimeError(f"{what} must be a number, not {value!r}")
    if not math.isfinite(value):
        raise StepTimeError(f"{what} must be finite, not {value}")
    return float(value)


def _sane(seconds: float, what: str, name: str) -> float:
    if seconds > ABSURD_SECONDS:
        raise StepTimeError(
            f"{what} would take {seconds:.3g} s on one {chip(name).chip}, more than a "
            "day per step: check the units (bytes, not bits; per device, not per job)"
        )
    return seconds


def compute_seconds(flops: float, name: str, dtype: str = "bfloat16") -> float:
    """The least time one chip needs for `flops`: at its published dense peak."""
    flops = _finite(flops, "flops")
    if flops <= 0:
        raise StepTimeError(f"flops must be positive, not {flops}: a step computes")
    return _sane(flops / peak(name, dtype), f"{flops:.3g} FLOPs", name)


def network_seconds(bytes_by_network: dict[str, float], name: str) -> dict[str, float]:
    """For each network, the least time one device needs to send its bytes over it.

    Keys are the networks of the chip's family: `ici` and `dcn` for a TPU, `nvlink` and
    `ib` for a GPU. Zero bytes (a one-slice job sends nothing between slices) take 0 s."""
    links = chip(name)
    allowed = FAMILY_NETWORKS[links.within_name]
    seconds = {}
    for network, sent in bytes_by_network.items():
        if network not in allowed:
            raise StepTimeError(
                f"a {links.chip} sends over {' and '.join(allowed)}, not {network!r}"
            )
        sent = _finite(sent, f"bytes over {network}")
        if sent < 0:
            raise StepTimeError(f"bytes over {network} must be >= 0, not {sent}")
        rate = getattr(links, NETWORKS[network])
        seconds[network] = _sane(sent / rate, f"{sent:.3g} bytes over {network}", name)
    return seconds


@dataclass(frozen=True)
class Bound:
    """Lower bounds on one step's time per device, in seconds."""

    compute: float
    networks: dict[str, float]

    @property
    def communication(self) -> float:
        """The longest network: they run side by side."""
        return max(self.networks.values(), default=0.0)

    @property
    def no_overlap(self) -> float:
        """Nothing overlaps: compute, then each network in turn."""
        return self.compute + sum(self.networks.values())

    @property
    def perfect_overlap(self) -> float:
        """Everything overlaps: the slowest of compute and the networks."""
        return max(self.compute, self.communication)

    @property
    def mfu_bound(self) -> float:
        """The best model-FLOPs utilisation the step could reach: compute time at peak
        over the least time the whole step can take."""
        return self.compute / self.perfect_overlap


def bound(
    flops: float,
    bytes_by_network: dict[str, float],
    name: str,
    dtype: str = "bfloat16",
) -> Bound:
    """The step's bounds on chip `name`: its matmul FLOPs and its bytes per network."""
    return Bound(
        compute_seconds(flops, name, dtype), network_seconds(bytes_by_network, name)
    )


def _layout(strategy: str, mesh: dict[str, int], model: cm.MLP) -> tuple[int, int]:
    data, ways = cm._devices(strategy, mesh)
    if strategy == "pipeline":
        raise StepTimeError(
            "the pipeline's FLOPs are not modelled: its compiled program counts one tick"
        )
    cm._check_divides(model, data, ways)
    return data, ways


def matmul_flops(strategy: str, mesh: dict[str, int], model: cm.MLP) -> float:
    """The step's matrix-multiplication FLOPs on one device: every strategy splits the
    10 * batch * d * hidden evenly over all its devices."""
    data, ways = _layout(strategy, mesh, model)
    return MATMULS * 2 * model.batch * model.d * model.hidden / (data * ways)


def updated_params(strategy: str, mesh: dict[str, int], model: cm.MLP) -> float:
    """Parameters one device's Adam updates: all of them (data parallelism), its shard
    (FSDP), or its share of the split kernels and hidden bias plus the whole output bias
    (tensor, 2-D)."""
    data, ways = _layout(strategy, mesh, model)
    if strategy == "data parallel":
        return model.params
    if strategy == "FSDP":
        return model.params / data
    return cm._held_split(model, ways)


def training_flops(strategy: str, mesh: dict[str, int], model: cm.MLP) -> float:
    """All the step's FLOPs on one device: the matmuls and Adam's update."""
    return matmul_flops(strategy, mesh, model) + ADAM_FLOPS * updated_params(
        strategy, mesh, model
    )


def compute_bound_batch(
    strategy: str,
    mesh: dict[str, int],
    name: str,
    model: cm.MLP,
    plan: cm.Plan = cm.TEXTBOOK,
    dtype: str = "bfloat16",
) -> float:
    """Rows per device above which the step's matmuls take longer than sending its bytes
    over the chip's own links (ICI, NVLink), for any layout of one slice or node.

    Rows per device: the batch over the `data` axis (tensor parallelism has none, so each
    device takes the whole batch). Both times are linear in those rows b: compute k * b,
    k = MATMULS * 2 * d * hidden / (model ways * C); the ring model's wire bytes under
    `plan`, w0 + w1 * b, where w0 does not grow with the batch (gradients, gathered
    weights) and w1 does (the all-reduced activations). They are equal at
    b* = w0 / (W * k - w1). Where W * k <= w1 the activations alone outlast the matmuls
    at every batch: inf. Tensor parallelism has w0 = 0, so its answer is 0 or inf."""
    data, ways = _layout(strategy, mesh, model)
    if data * ways < 2:
        raise StepTimeError(
            f"need at least 2 devices to communicate, not {data * ways}"
        )

    def wire(rows: int) -> float:
        sized = cm.MLP(model.d, model.hidden, rows * data, model.microbatches)
        return cm.wire_bytes(strategy, mesh, sized, plan)

    per_row = wire(2) - wire(1)
    fixed = wire(1) - per_row
    rate = chip(name).within
    row_seconds = MATMULS * 2 * model.d * model.hidden / ways / peak(name, dtype)
    gain = row_seconds - per_row / rate  # what each more row adds to compute over links
    if gain <= 0:
        return math.inf
    return fixed / rate / gain


def compute_bound_rows(
    strategy: str, devices: int, name: str, model: cm.MLP, dtype: str = "bfloat16"
) -> float:
    """Data parallelism or FSDP as taught over `devices` chips of one slice or node: the
    rows per device above which the matmuls take longer than sending the step's bytes
    over the chip's own links (ICI, NVLink).

    Compute: MATMULS * 2 * b * d * hidden / C for b rows per device. Communication: the
    ring model's wire bytes / W, which for these two layouts does not depend on the
    batch (2(N-1)/N of the float32 gradients). Equal at
    b* = C * wire / (W * MATMULS * 2 * d * hidden): `compute_bound_batch` with w1 = 0."""
    if strategy not in ("data parallel", "FSDP"):
        raise StepTimeError(
            f"the threshold is derived for data parallel and FSDP, not {strategy!r}"
        )
    if devices < 2:
        raise StepTimeError(f"need at least 2 devices to communicate, not {devices}")
    # the wire bytes of these layouts do not depend on the batch: price one that divides
    sizing = cm.MLP(model.d, model.hidden, devices)
    return compute_bound_batch(strategy, {"data": devices}, name, sizing, dtype=dtype)
