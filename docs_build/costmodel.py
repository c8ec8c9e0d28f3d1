"""The site's cost model: what one training step of the MLP keeps and sends per device, by formula.

Two figures per strategy, for a mesh of N devices:

- **state**: the bytes of the step's arguments on one device: the parameters, Adam's two
  moments (so three copies of each parameter the device holds) and the device's share of the
  batch (inputs and targets). Checked against `memory_analysis().argument_bytes`.
- **wire**: the bytes one device sends per step, by the ring model: all-gather and
  reduce-scatter (N-1)/N * V, all-reduce 2(N-1)/N * V, a permute its whole block.
  Checked against the HLO reader (`docs_build.hlo`).

The wire formula needs the plan the compiler chose: which collective carries each tensor, and
at what width. `Plan` names it; `plan_of` reads it from a compiled program, and
`TEXTBOOK` is the plan the training pages teach. tests/docs_build/test_costmodel.py checks,
for every compiled program in docs_build/compiled/results/, that the formula under the
program's own plan gives its bytes within `TOLERANCE`, and names where the plan is not the
textbook's.
"""

from __future__ import annotations

from dataclasses import dataclass

# How far a formula may be from the compiled figure, as a fraction of it. The state of a TPU
# program is a little larger: it pads small arrays (scalars, biases split 256 ways) to its
# memory tiles.
TOLERANCE = 0.015
F32 = 4
STRATEGIES = ("data parallel", "FSDP", "tensor parallel", "2-D", "pipeline")


class CostModelError(ValueError):
    """A size, mesh or plan the model cannot price."""


@dataclass(frozen=True)
class MLP:
    """The step's model: two dense layers, d -> hidden -> d, f32, trained with Adam."""

    d: int
    hidden: int
    batch: int
    microbatches: int = 8

    def __post_init__(self):
        for name in ("d", "hidden", "batch", "microbatches"):
            if getattr(self, name) < 1:
                raise CostModelError(
                    f"{name} must be a positive integer, not {getattr(self, name)}"
                )

    @property
    def params(self) -> int:
        """Parameter count: two kernels and two biases."""
        return 2 * self.d * self.hidden + self.hidden + self.d

    @property
    def batch_bytes(self) -> int:
        """Inputs and targets of the whole batch, f32."""
        return 2 * self.batch * self.d * F32


@dataclass(frozen=True)
class Plan:
    """How the compiler moved the step's tensors.

    `gather`: how FSDP assembles its kernels ("all-gather", or "all-reduce" of zero-padded
    shards); `gradients`: how FSDP sums its gradients ("reduce-scatter" or "all-reduce");
    `width`: bytes per element of what is gathered or passed between stages (4 for f32, 2
    when the compiler moves bfloat16 copies). The MLP is float32; the TPU programs gather
    bfloat16 because JAX's default matmul precision lets a TPU round a float32 product's
    operands to bfloat16, not because of the chip: compiled under
    `jax.default_matmul_precision("highest")`, v5e:2x4's FSDP step gathers float32.
    """

    gather: str = "all-gather"
    gradients: str = "reduce-scatter"
    width: int = F32

    def __post_init__(self):
        if self.gather not in ("all-gather", "all-reduce"):
            raise CostModelError(
                f"gather must be all-gather or all-reduce, not {self.gather!r}"
            )
        if self.gradients not in ("reduce-scatter", "all-reduce"):
            raise CostModelError(
                f"gradients must be reduce-scatter or all-reduce, not {self.gradients!r}"
            )
        if self.width not in (2, 4):
            raise CostModelError(
                f"width must be 2 (bf16) or 4 (f32) bytes, not {self.width}"
            )

    def describe(self, strategy: str) -> str:
        """The plan, in the words of a table cell: only what the strategy's formula uses."""
        width = "bf16" if self.width == 2 else "f32"
        if strategy == "FSDP":
            return f"{self.gather} of {width} weights, {self.gradients} of gradients"
        if strategy == "pipeline":
            return f"{width} activations"
        return "as taught"

    def departs(self, strategy: str) -> bool:
        """Whether the formula under this plan differs from the one the pages teach."""
        if strategy == "FSDP":
            return self != TEXTBOOK
        return strategy == "pipeline" and self.width != TEXTBOOK.width


TEXTBOOK = Plan()


def _devices(strategy: str, mesh: dict[str, int]) -> tuple[int, int]:
    """(data-parallel ways, model-parallel ways) of a mesh for a strategy."""
    if strategy not in STRATEGIES:
        raise CostModelError(f"unknown strategy {strategy!r}: use one of {STRATEGIES}")
    sizes = list(mesh.values())
    if not sizes or any(n < 1 for n in sizes):
        raise CostModelError(f"a mesh needs positive axis sizes, not {mesh}")
    if strategy == "2-D":
        if set(mesh) != {"data", "model"}:
            raise CostModelError(
                f"2-D needs a mesh with axes data and model, not {mesh}"
            )
        return mesh["data"], mesh["model"]
    if len(sizes) != 1:
        raise CostModelError(f"{strategy} uses one mesh axis, not {mesh}")
    n = sizes[0]
    return (n, 1) if strategy in ("data parallel", "FSDP") else (1, n)


def _check_divides(model: MLP, data: int, model_ways: int) -> None:
    if model.batch % data:
        raise CostModelError(
            f"a batch of {model.batch} does not split over {data} devices: use a multiple of {data}"
        )
    if model.hidden % model_ways:
        raise CostModelError(
            f"hidden width {model.hidden} does not split {model_ways} ways: use a multiple of "
            f"{model_ways}"
        )


def _held_split(model: MLP, ways: int) -> float:
    """Parameters one device holds when the model axis splits them `ways` ways (tensor, 2-D):
    the kernels and the hidden bias are split; the output bias is whole on every device."""
    return (2 * model.d * model.hidden + model.hidden) / ways + model.d


def state_bytes(strategy: str, mesh: dict[str, int], model: MLP) -> float:
    """Bytes of the step's arguments on one device: 3 copies of its parameters + its batch."""
    data, ways = _devices(strategy, mesh)
    if strategy == "pipeline":
        raise CostModelError(
            "the pipeline's state is not modelled: its stages hold whole layers"
        )
    _check_divides(model, data, ways)
    held = model.params / data if strategy == "FSDP" else _held_split(model, ways)
    return 3 * held * F32 + model.batch_bytes / data


# The temporaries of a step follow the compiler's buffer assignment, which a formula
# predicts only where it is simple: see transient_bytes.
TRANSIENT_TOLERANCE = 0.07
TRANSIENT_SLACK = 1024  # bytes: the CPU keeps a few scalars in its temporaries


def transient_bytes(
    strategy: str, mesh: dict[str, int], model: MLP, backend: str
) -> float | None:
    """The temporaries of one step on one device, where a formula holds; None elsewhere.

    - CPU, FSDP: both kernels gathered whole, and their whole gradients, in f32 (the CPU
      all-reduces the full gradients before each device keeps its slice).
    - CPU, data, tensor and 2-D parallelism: nothing (the update writes the outputs).
    - TPU, data parallelism: the whole gradients, before the all-reduce sums them (the
      compiled figure is up to TRANSIENT_TOLERANCE above: buffers XLA adds).
    - GPU, FSDP: both kernels gathered whole, in f32, kept for the backward pass (the
      compiled figure is up to TRANSIENT_TOLERANCE above).
    Everything else depends on how the compiler schedules and fuses the step (None).
    """
    data, ways = _devices(strategy, mesh)
    _check_divides(model, data, ways)
    if backend not in ("cpu", "tpu", "gpu"):
        raise CostModelError(f"backend must be cpu, tpu or gpu, not {backend!r}")
    if backend == "gpu":
        return 2 * (model.d * model.hidden) * F32 if strategy == "FSDP" else None
    if backend == "cpu":
        if strategy == "FSDP":
            return 2 * (2 * model.d * model.hidden) * F32
        return 0.0 if strategy != "pipeline" else None
    return model.params * F32 if strategy == "data parallel" else None


def wire_bytes(
    strategy: str, mesh: dict[str, int], model: MLP, plan: Plan = TEXTBOOK
) -> float:
    """Bytes one device sends in one step, by the ring model, under `plan`."""
    data, ways = _devices(strategy, mesh)
    _check_divides(model, data, ways)
    p = model.params
    if strategy == "data parallel":
        return 2 * (data - 1) / data * p * F32
    if strategy == "FSDP":
        share = (data - 1) / data
        gather = share * p * plan.width * (2 if plan.gather == "all-reduce" else 1)
        grads = share * p * F32 * (2 if plan.gradients == "all-reduce" else 1)
        return gather + grads
    activations = model.batch / data * model.d * F32  # one all-reduce per step, forward
    if strategy == "tensor parallel":
        return 2 * (ways - 1) / ways * activations
    if strategy == "2-D":
        held = _held_split(model, ways)
        return 2 * (data - 1) / data * held * F32 + 2 * (ways - 1) / ways * activations
    # pipeline: M microbatches through S stages take M + S - 1 ticks; at each, a stage passes
    # one microbatch's activations to the next.
    stages = ways
    ticks = model.microbatches + stages - 1
    return ticks * model.batch / model.microbatches * model.d * plan.width


@dataclass(frozen=True)
class Links:
    """What one chip can send per second, and what it holds, from a cited source: bytes
    become time only with these, and only as a floor (every link busy, nothing else in the
    way). `within`: to the chips of its own TPU slice (ICI) or GPU node (NVLink);
    `between`: to other slices or nodes, its share of its host's network cards."""

    chip: str
    within: float  # bytes/s one chip sends over its slice's or node's own links
    between: float  # bytes/s one chip sends to other slices or nodes
    within_name: str
    between_name: str
    source: str
    url: str
    # The card's own figures, for the GPU spec files a test holds to them (None: not used)
    memory_bytes: float | None = None  # published device memory
    memory_per_second: float | None = None  # published memory bandwidth
    cores: int | None = None  # streaming multiprocessors
    # Peak dense matrix throughput per chip, FLOP/s, as published (never the figures
    # with structured sparsity); None where the source publishes none for that dtype.
    bf16_flops: float | None = None
    f32_flops: float | None = None

    @property
    def ici(self) -> float:
        return self.within

    @property
    def dcn(self) -> float:
        return self.between


# Google's figures for v5e: ICI 400 GBps per chip, bidirectional (so 200 GB/s out); each
# host of 8 chips has 2 x 100 Gbps NICs (so 25 Gbit/s out per chip). Peak compute: "Peak
# compute per chip (bf16) | 197 TFLOPs" (the same page publishes no float32 peak). Memory:
# "HBM2 capacity and bandwidth | 16 GB, 819 GBps" (a later version of the page says "HBM
# bandwidth per chip | 800 GiBps", 859 GB/s: taken as 819e9 bytes/s, the smaller reading).
V5E = Links(
    chip="v5e",
    within=400e9 / 2,
    between=2 * 100e9 / 8 / 8,
    within_name="ICI",
    between_name="DCN",
    source="Google Cloud's TPU v5e documentation",
    url="https://cloud.google.com/tpu/docs/v5e",
    memory_bytes=16e9,
    memory_per_second=819e9,
    bf16_flops=197e12,
)
# Google's figures for v5p (the table of key specifications): "Peak compute per chip (BF16)
# (TFLOPs) | 459"; "HBM capacity per chip (GiB) | 95" (an older version of the page says
# "95GB": taken as 95e9 bytes, the smaller reading); "HBM bandwidth per chip (GBps) |
# 2765"; "Bidirectional inter-chip interconnect (ICI) bandwidth per chip (GBps) | 1200"
# (so 600 GB/s out; the older page's "Interchip Interconnect BW | 4800 Gbps" is the same
# 600 GB/s); "Data center network (DCN) bandwidth per chip (Gbps) | 50" (so 6.25 GB/s).
V5P = Links(
    chip="v5p",
    within=1200e9 / 2,
    between=50e9 / 8,
    within_name="ICI",
    between_name="DCN",
    source="Google Cloud's TPU v5p documentation",
    url="https://cloud.google.com/tpu/docs/v5p",
    memory_bytes=95e9,
    memory_per_second=2765e9,
    bf16_flops=459e12,
)
# NVIDIA's figures for H100 SXM: NVLink 900 GB/s per GPU, bidirectional (so 450 GB/s out);
# 80 GB of HBM3 at 3.35 TB/s; 132 SMs. Between nodes, a DGX H100 has one 400 Gb/s
# ConnectX-7 InfiniBand port per GPU (so 50 GB/s out per GPU). Peak compute, H100 SXM
# column: "BFLOAT16 Tensor Core 1,979 teraFLOPS*" where "* With sparsity", so 989.5 dense;
# "FP32 67 teraFLOPS" (no sparsity).
H100 = Links(
    chip="H100 SXM",
    within=900e9 / 2,
    between=400e9 / 8,
    within_name="NVLink",
    between_name="InfiniBand",
    source="NVIDIA's H100 Tensor Core GPU datasheet and DGX H100 datasheet",
    url="https://www.nvidia.com/en-us/data-center/h100/",
    memory_bytes=80e9,
    memory_per_second=3.35e12,
    cores=132,
    bf16_flops=1979e12 / 2,
    f32_flops=67e12,
)
# NVIDIA's figures for A100 SXM4 80 GB: NVLink 600 GB/s per GPU, bidirectional (so 300
# GB/s out); 80 GB of HBM2e at 2,039 GB/s; 108 SMs. Between nodes, a DGX A100 has one
# 200 Gb/s ConnectX-6 HDR InfiniBand port per GPU for compute traffic (so 25 GB/s out).
# Peak compute: "BFLOAT16 Tensor Core 312 TFLOPS | 624 TFLOPS*" (the second with
# sparsity); "FP32 19.5 TFLOPS".
A100 = Links(
    chip="A100 SXM4 80GB",
    within=600e9 / 2,
    between=200e9 / 8,
    within_name="NVLink",
    between_name="InfiniBand",
    source="NVIDIA's A100 Tensor Core GPU datasheet and DGX A100 datasheet",
    url="https://www.nvidia.com/en-us/data-center/a100/",
    memory_bytes=80e9,
    memory_per_second=2.039e12,
    cores=108,
    bf16_flops=312e12,
    f32_flops=19.5e12,
)
LINKS = {"v5e": V5E, "v5p": V5P, "h100": H100, "a100": A100}


def seconds(sent_bytes: float, per_second: float) -> float:
    """The least time a chip needs to send `sent_bytes` at `per_second`."""
    if sent_bytes < 0 or per_second <= 0:
        raise CostModelError(
            f"need bytes >= 0 and a positive bandwidth, not {sent_bytes}, {per_second}"
        )
    return sent_bytes / per_second


def dcn_bytes(mesh: dict[str, int], model: MLP) -> float:
    """Bytes one device sends between slices per step, on a ("slice", "data") mesh.

    Data parallelism and FSDP within a slice both sum the gradients over the slice's own
    chips first, so each chip is left with 1/n of them (n: chips per slice); only that
    share is all-reduced across the S slices: 2(S-1)/S * P/n."""
    if set(mesh) != {"slice", "data"} or min(mesh.values()) < 1:
        raise CostModelError(
            f"DCN bytes need a mesh with axes slice and data, not {mesh}"
        )
    slices, n = mesh["slice"], mesh["data"]
    _check_divides(model, slices * n, 1)
    return 2 * (slices - 1) / slices * model.params * F32 / n


def plan_of(program: dict) -> Plan:
    """The plan a compiled program (an entry of results.json) carried out."""
    kinds = set(program["summary"])
    big = [c for c in program["collectives"] if c["result_bytes"] >= 65536]
    moved = [c for c in big if c["kind"] in ("all-gather", "collective-permute")]
    if not moved and program["strategy"].startswith("FSDP"):
        # no all-gather: the kernels travel inside an all-reduce with other tensors
        moved = [
            c for c in big if any(s.startswith("bf16") for s in c["shapes"])
        ] or big
    widths = {
        2 if c["dtype"] == "bf16" or c["shapes"][0].startswith("bf16") else 4
        for c in moved
    }
    width = min(widths) if widths else F32
    gather = "all-gather" if "all-gather" in kinds else "all-reduce"
    gradients = "reduce-scatter" if "reduce-scatter" in kinds else "all-reduce"
    return Plan(gather=gather, gradients=gradients, width=width)
