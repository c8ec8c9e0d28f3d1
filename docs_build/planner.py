"""The strategy planner's cost model: a transformer's training step, per device, by formula.

The model is the transformer page's (`snippets.advanced.transformer`): token embedding,
`layers` blocks of attention (q and out: d^2 weights each; k and v: 2 d g k for g key/value
heads of width k) and an MLP (up and down, and a gate when it is gated: 2 or 3 d m), two norms
per block, a final norm and an output head (none when tied to the embedding); weights are
split by the page's RULES over a (data, fsdp, tensor) mesh, used in bfloat16, and trained
with AdamW.

For a layout of N devices it gives two figures per device, each a short sum of arithmetic
on the inputs, with its formula in words (`FORMULAS`), for the planner page to show:

- **state**: parameters, optimizer slots and the device's tokens: the step's arguments.
  Checked against `memory_analysis().argument_size_in_bytes`.
- **wire**: bytes one device sends per step, by the ring model (docs_build.costmodel),
  under the plan the compiler chose (`Plan`; `plan_of` reads it from a compiled program).
  Checked against the HLO reader's wire bytes.

Inputs no layout could use are refused field by field (`input_problems`, raised as
`InputError`); a layout that cannot split the model says why and what to change
(`reasons`), and the other layouts stand.

Both are held to compiled programs (docs_build/planner_grid.json, made by
`python -m docs_build.planner_grid`) by tests/docs_build/test_planner.py, within `TOLERANCE`.

Not claimed: activation and temporary bytes (no formula held within a tolerance across
targets and sizes: `temporaries` says so), and anything about a pipeline (the transformer
step has no pipeline). Which rows of the page a compiled program checks, and what the
others are extrapolated from, is the page's to say (docs_build.planner_page.basis): it
depends on the grid's sizes, meshes, device count and targets, none of which the formulas
need.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

from docs_build import hlo
from docs_build.costmodel import F32, CostModelError

__all__ = ["CostModelError"]

# How far the state and wire formulas may be from a compiled program's figure, as a
# fraction of it, on every target of the grid. The page states it.
TOLERANCE = 0.01
BF16 = 2
INT32 = 4
# Optimizer -> (slots: copies of each parameter it keeps, scalars: int32 counters in the
# state, the step's own counter included).
OPTIMIZERS = {"sgd": (0, 1), "momentum": (1, 1), "adam": (2, 2), "adamw": (2, 2)}
# The optimizer and parameter type of the compiled grid (the transformer page's step):
# a row with others is not checked (docs_build.planner_page.basis).
CHECKED_OPTIMIZERS = ("adamw",)
CHECKED_PARAM_BYTES = (F32,)
# Model.remat: False (no remat), True (recompute each layer), or one of the transformer
# page's remat policies by the name Config.remat takes (model.REMAT_POLICIES; "full" is
# True's), whose costs the remat page measures (docs_build.transformer_cost).
REMAT_POLICIES = ("full", "dots", "dots_no_batch", "names", "offload")
# The policies that keep the attention's output projection (a product without a batch
# dimension): its sum over tensor is not run again in the backward pass (the compiled
# steps of the remat page run one all-reduce fewer per layer under them).
KEEPS_OUTPUT_PROJECTION = ("dots", "dots_no_batch")


def remat_problem(value) -> str | None:
    """What to change in a remat value, or None: a bool or a policy's name."""
    if isinstance(value, bool) or (isinstance(value, str) and value in REMAT_POLICIES):
        return None
    return (
        f"remat must be one of none (False), full (True), "
        f"{', '.join(REMAT_POLICIES[1:])}, not {value!r}"
    )


def _ring(kind: str, n: int, full: float) -> float:
    """Bytes one device sends for one `kind` over `n` devices of a `full`-byte array."""
    if n == 1:
        return 0.0
    record = {"kind": kind, "group_size": n, "full_bytes": full, "result_bytes": full}
    return hlo.wire_bytes(record)


class InputError(CostModelError):
    """Inputs the planner refuses, before any layout: `problems` maps each field at fault
    to what to change (the page shows each message beside its field)."""

    def __init__(self, problems: dict[str, str]):
        super().__init__("; ".join(problems.values()))
        self.problems = dict(problems)


# The model's whole-number fields, in the form's order.
WHOLE = (
    "vocab",
    "d_model",
    "heads",
    "kv_heads",
    "mlp",
    "layers",
    "seq",
    "batch",
    "microbatches",
)


def _positive_integer(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def input_problems(model) -> dict[str, str]:
    """Each field of `model` (a Model's fields) that no layout could use, with what to
    change: a size that is not a positive integer, heads that do not divide d_model (by
    heads), key/value heads that do not divide the heads (by kv_heads), an unknown
    optimizer or parameter type. A size that one layout cannot split is that layout's
    problem (`reasons`), not the model's."""
    found = {}
    for name in WHOLE:
        value = getattr(model, name)
        if name == "kv_heads" and value is None:
            continue  # one per query head
        if not _positive_integer(value):
            found[name] = f"{name} must be a positive integer, not {value!r}"
    whole = set(found).isdisjoint  # the sizes a division needs are whole numbers
    if whole({"d_model", "heads"}) and model.d_model % model.heads:
        found["heads"] = (
            f"d_model {model.d_model} does not split into {model.heads} heads: make "
            f"d_model a multiple of heads"
        )
    kv = model.heads if model.kv_heads is None else model.kv_heads
    if whole({"heads", "kv_heads"}) and model.heads % kv:
        found["kv_heads"] = (
            f"{kv} key/value heads do not serve {model.heads} query heads equally: make "
            f"kv_heads divide heads"
        )
    if model.optimizer not in OPTIMIZERS:
        found["optimizer"] = (
            f"optimizer must be one of {sorted(OPTIMIZERS)}, not {model.optimizer!r}"
        )
    if (why := remat_problem(model.remat)) is not None:
        found["remat"] = why
    if model.param_bytes not in (BF16, F32):
        found["param_bytes"] = (
            f"param_bytes must be 4 (float32) or 2 (bfloat16), not {model.param_bytes!r}"
        )
    return found


@dataclass(frozen=True)
class Model:
    """The planner's inputs about the model and its training."""

    vocab: int
    d_model: int
    heads: int
    mlp: int
    layers: int
    seq: int
    batch: int  # global batch, in sequences
    # the page's default, True: recompute each layer in the backward pass; False: keep
    # what autodiff needs; or a policy's name (REMAT_POLICIES)
    remat: bool | str = True
    optimizer: str = "adamw"
    param_bytes: int = F32  # 4: float32 parameters and optimizer slots; 2: bfloat16
    microbatches: int = 1  # only the pipeline uses it
    kv_heads: int | None = None  # key/value heads; None: one per query head
    gated: bool = False  # a SwiGLU MLP: three matrices, not two
    tied: bool = False  # the output head is the embedding, transposed

    def __post_init__(self):
        problems = input_problems(self)
        if problems:
            raise InputError(problems)

    @classmethod
    def from_config(cls, config, batch: int, **options) -> Model:
        """From the transformer page's `Config` (its fields) and a global batch."""
        return cls(
            vocab=config.vocab,
            d_model=config.d_model,
            heads=config.heads,
            mlp=config.mlp,
            layers=config.layers,
            seq=config.seq,
            batch=batch,
            remat=config.remat,
            kv_heads=config.kv_heads,
            gated=config.gated,
            tied=config.tied,
            **options,
        )

    @property
    def kv(self) -> int:
        """Key/value heads: `heads` unless fewer are given."""
        return self.heads if self.kv_heads is None else self.kv_heads

    @property
    def head_dim(self) -> int:
        return self.d_model // self.heads

    @property
    def layer_matrices(self) -> int:
        """Weights of one block's matrices: q and out (d^2 each), k and v (2 d g k), and
        the MLP's (2 or 3 d m)."""
        d = self.d_model
        attention = 2 * d * d + 2 * d * self.kv * self.head_dim
        return attention + (3 if self.gated else 2) * d * self.mlp

    @property
    def embeddings(self) -> int:
        """The embedding, and the head unless it is tied to it: 1 or 2 V d."""
        return (1 if self.tied else 2) * self.vocab * self.d_model

    @property
    def params(self) -> int:
        """L (M + 2 d) + (1 or 2) V d + d: blocks, embedding and head, final norm."""
        d = self.d_model
        return self.layers * (self.layer_matrices + 2 * d) + self.embeddings + d


@dataclass(frozen=True)
class Layout:
    """A way to place the step on devices: a (data, fsdp, tensor) mesh, or a pipeline."""

    name: str
    data: int = 1
    fsdp: int = 1
    tensor: int = 1
    stages: int = 1

    def __post_init__(self):
        sizes = (self.data, self.fsdp, self.tensor, self.stages)
        if any(not isinstance(n, int) or n < 1 for n in sizes):
            raise CostModelError(f"a layout needs positive axis sizes, not {self}")
        if self.stages > 1 and self.data > 1:
            raise CostModelError(
                "the planner models a pipeline of stages split over fsdp and tensor: "
                "give stages with fsdp and tensor, or data, fsdp and tensor, not stages "
                "and data"
            )

    @property
    def devices(self) -> int:
        return self.data * self.fsdp * self.tensor * self.stages

    @property
    def mesh(self) -> tuple[int, int, int]:
        return (self.data, self.fsdp, self.tensor)


def name_of(data: int, fsdp: int, tensor: int) -> str:
    split = [
        n for n, k in (("data", data), ("FSDP", fsdp), ("tensor", tensor)) if k > 1
    ]
    if not split:
        return "one device"
    if len(split) == 1:
        return split[0]
    if split == ["data", "tensor"]:
        return "2-D"
    return " x ".join(split)


def divisors(n: int) -> list[int]:
    """The divisors of n, smallest first."""
    small = [k for k in range(1, math.isqrt(n) + 1) if n % k == 0]
    return small + [n // k for k in reversed(small) if k * k != n]


def pipeline_name(fsdp: int, tensor: int) -> str:
    return " x ".join(
        ["pipeline"] + [n for n, k in (("FSDP", fsdp), ("tensor", tensor)) if k > 1]
    )


def layouts(devices: int, stages: bool = True) -> list[Layout]:
    """The planner's rows for `devices`: every factorisation of the devices over (data,
    fsdp, tensor): data, FSDP, tensor; the splits over two axes of sizes > 1: data x
    tensor ("2-D"), data x FSDP (hybrid sharding: FSDP within each group, data
    parallelism between groups), FSDP x tensor; the splits over all three; and, with
    `stages`, every pipeline: `devices` stages, then fewer stages, each split over fsdp,
    tensor or both (stages x fsdp x tensor)."""
    if not isinstance(devices, int) or isinstance(devices, bool) or devices < 1:
        raise CostModelError(f"devices must be a positive integer, not {devices!r}")
    rows = [
        Layout("data", data=devices),
        Layout("FSDP", fsdp=devices),
        Layout("tensor", tensor=devices),
    ]
    splits = [k for k in divisors(devices) if 1 < k < devices]
    rows += [Layout("2-D", data=devices // t, tensor=t) for t in splits]
    rows += [Layout("data x FSDP", data=devices // f, fsdp=f) for f in splits]
    rows += [Layout("FSDP x tensor", fsdp=devices // t, tensor=t) for t in splits]
    rows += [
        Layout(name_of(a, f, t), data=a, fsdp=f, tensor=t)
        for t in splits
        for f in splits
        if devices % (t * f) == 0 and (a := devices // (t * f)) > 1
    ]
    if stages:
        for s in reversed(splits + [devices] * (devices > 1)):
            rest = devices // s
            inner = [(rest, 1), (1, rest)] if rest > 1 else [(1, 1)]
            inner += [(rest // t, t) for t in divisors(rest) if 1 < t < rest]
            rows += [
                Layout(pipeline_name(f, t), fsdp=f, tensor=t, stages=s)
                for f, t in inner
            ]
    return rows


def no_layout(model: Model, devices: int) -> str | None:
    """Why no layout of `devices` can split `model`, with what to change (None: one can):
    the device counts nearest below and above that some layout could use."""
    found = layouts(devices)
    if any(not reasons(model, lay) for lay in found):
        return None

    def usable(n):
        return any(not reasons(model, lay) for lay in layouts(n))

    below = next(
        (n for n in range(devices - 1, max(devices - NEAR, 0), -1) if usable(n)), None
    )
    above = next((n for n in range(devices + 1, devices + NEAR + 1) if usable(n)), None)
    near = " or ".join(str(n) for n in (below, above) if n is not None)
    return (
        f"None of the {len(found)} layouts of {devices} devices can split this model "
        f"(each row says why): "
        + (f"use {near} devices, or " if near else "")
        + "change the sizes the rows name"
    )


# How far from a device count no layout can use the planner looks for one some can.
NEAR = 64


def _split_reasons(model: Model, fsdp: int, tensor: int) -> list[str]:
    """What a d_model split over fsdp, and a vocabulary, heads, key/value heads and MLP
    width split over tensor, need."""
    found = []
    if model.d_model % fsdp:
        found.append(
            f"d_model {model.d_model} does not split {fsdp} ways (fsdp): use a "
            f"multiple of {fsdp}"
        )
    for name in ("vocab", "heads", "kv", "mlp"):
        if getattr(model, name) % tensor:
            found.append(
                f"{'kv_heads' if name == 'kv' else name} {getattr(model, name)} does not "
                f"split {tensor} ways (tensor): use a multiple of {tensor}"
            )
    return found


def reasons(model: Model, layout: Layout) -> list[str]:
    """Why `layout` cannot place `model`, each with what to change (none: it can). A
    pipeline needs layers that split into its stages, a batch that cuts into its
    microbatches and microbatches that split over fsdp; a mesh needs a batch that splits
    over data x fsdp; both need a d_model that splits over fsdp, and a vocabulary, heads,
    key/value heads and MLP width that split over tensor."""
    found = []
    f, t = layout.fsdp, layout.tensor
    if layout.stages > 1:
        if model.layers % layout.stages:
            found.append(
                f"{model.layers} layers do not split into {layout.stages} stages: make "
                f"layers a multiple of {layout.stages}"
            )
        if model.batch % model.microbatches:
            found.append(
                f"a batch of {model.batch} does not cut into {model.microbatches} "
                f"microbatches: use a number of microbatches that divides it"
            )
        elif model.batch // model.microbatches % f:
            found.append(
                f"a microbatch of {model.batch // model.microbatches} sequences does not "
                f"split over fsdp = {f} devices: use a batch that is a multiple of "
                f"microbatches x fsdp = {model.microbatches * f}"
            )
        return found + _split_reasons(model, f, t)
    rows = layout.data * f
    if model.batch % rows:
        found.append(
            f"a batch of {model.batch} does not split over data x fsdp = {rows} devices: "
            f"use a multiple of {rows}"
        )
    return found + _split_reasons(model, f, t)


def check(model: Model, layout: Layout) -> None:
    """Refuse a layout that cannot place the model, saying what to change (`reasons`)."""
    found = reasons(model, layout)
    if found:
        raise CostModelError("; ".join(found))


@dataclass(frozen=True)
class Plan:
    """How the compiler moved the step's tensors (what the wire formula needs).

    gather: bytes per element of the gathered block matrices and head (2: the bfloat16
    copies the model casts them to; 4: float32, gathered before the cast);
    gradients: bytes per element of their summed gradients (2: the bfloat16 the
    weight-gradient matmuls produce; 4: float32, converted before the sum);
    activations: bytes per element of the tensor axis's activation sums (one per block
    travels in float32 on every program compiled: see wire_terms);
    scatter: the matrices whose gradients are summed by a reduce-scatter over fsdp (and
    an all-reduce of the slice over data) rather than an all-reduce over data x fsdp,
    from `matrices(model)`: "q or out" (the same size, so the program cannot say which;
    once for each), "kv", "mlp" (gate, up or down: the same size; once for each) and
    "head"; None: every one the model has.
    """

    gather: int = BF16
    gradients: int = BF16
    activations: int = BF16
    scatter: tuple[str, ...] | None = None
    # How many all-reduces over tensor sum the input gradients of a block's first
    # matrices (q, k and v; the MLP's up, and gate): None, one per matrix group, as the
    # code computes them (q; k and v; up; gate), the CPU's plan; the TPU compilers add the
    # ones that share an input before summing, two per block.
    input_sums: int | None = None
    # Whether the float32 embedding gradient is summed by a reduce-scatter over fsdp (and
    # an all-reduce over data), not an all-reduce over data x fsdp.
    embedding_scatter: bool = False
    # The block matrices the backward pass gathers again (with remat) in float32 rather
    # than at the gather width: none as the code asks; XLA's GPU compiler regathers most.
    regather: tuple[str, ...] = ()
    # The width the head is gathered in: None, the gather width.
    head_gather: int | None = None
    # The width of each block's float32 sum over tensor (the attention output's): the GPU
    # compiler sums it in bfloat16.
    block_sum: int = F32
    # For a tied head: whether its gradient is summed apart from the embedding's (CPU,
    # TPU), or added to it first (XLA's GPU compiler).
    head_apart: bool = True
    # The fsdp axis sizes on which FSDP's weights travel as all-reduces of the whole
    # weight instead of all-gathers: twice a gather's bytes on a ring (libtpu on the
    # fsdp axis of 64 chips of a v5p slice).
    all_reduced_fsdp: tuple[int, ...] = ()

    def __post_init__(self):
        widths = {"head_gather": (None, BF16, F32)}  # None: the gather width
        for name in ("gather", "gradients", "activations", "block_sum", "head_gather"):
            if getattr(self, name) not in widths.get(name, (BF16, F32)):
                raise CostModelError(
                    f"{name} must be 2 (bf16) or 4 (f32) bytes, not {getattr(self, name)}"
                )
        for name in ("regather", "scatter"):
            names = getattr(self, name) or ()
            if any(names.count(m) > LARGEST.count(m) for m in names):
                raise CostModelError(
                    f"{name} names matrices from {LARGEST}, each at most as often as "
                    f"there, not {names!r}"
                )
        if self.input_sums is not None and (
            not isinstance(self.input_sums, int) or self.input_sums < 1
        ):
            raise CostModelError(
                f"input_sums must be a positive integer, not {self.input_sums!r}"
            )

    def scattered(self, model: Model) -> list[str]:
        """The model's matrices this plan reduce-scatters."""
        if self.scatter is None:
            return list(matrices(model))
        left = list(matrices(model))
        for m in self.scatter:
            if m not in left:
                raise CostModelError(
                    f"scatter names {m!r} more often than the model has it: "
                    f"{matrices(model)}"
                )
            left.remove(m)
        return list(self.scatter)

    def departures(self, model: Model | None = None) -> list[str]:
        """How this plan differs from the textbook's, in words (for `model`'s matrices;
        by default the transformer page's: q, kv, out, two MLP matrices, head)."""
        out = []
        width = {BF16: "bf16", F32: "f32"}
        for name in ("gather", "gradients", "activations"):
            ours, taught = getattr(self, name), getattr(TEXTBOOK, name)
            if ours != taught:
                out.append(f"{name} in {width[ours]}, not {width[taught]}")
        if self.input_sums is not None:
            taught = input_sums(model) if model else 3
            if self.input_sums != taught:
                out.append(
                    f"input gradients summed in {self.input_sums} all-reduces per block, "
                    f"not {taught}"
                )
        if self.embedding_scatter:
            out.append("the embedding's gradient reduce-scattered, not all-reduced")
        if self.regather:
            every_block = [
                m for m in (matrices(model) if model else MATRICES) if m != "head"
            ]
            out.append(
                f"{_matrix_words(list(self.regather), every_block, 'weights')} "
                "gathered again in f32 for the backward pass"
            )
        if self.head_gather not in (None, self.gather):
            out.append(f"the head gathered in {width[self.head_gather]}")
        if not self.head_apart:
            out.append("a tied head's gradient added to the embedding's before the sum")
        if self.all_reduced_fsdp:
            sizes = " or ".join(map(str, self.all_reduced_fsdp))
            out.append(
                f"FSDP's weights all-reduced whole over an fsdp axis of {sizes}, not "
                "gathered"
            )
        if self.block_sum != TEXTBOOK.block_sum:
            out.append(
                f"each block's attention output summed in {width[self.block_sum]}, not "
                f"{width[TEXTBOOK.block_sum]}"
            )
        every = list(matrices(model) if model else MATRICES)
        left = list(every)
        for m in (
            self.scattered(model)
            if model
            else (MATRICES if self.scatter is None else self.scatter)
        ):
            left.remove(m)
        if left == every:
            out.append("every gradient all-reduced over data x fsdp, not scattered")
        elif left:
            out.append(f"{_matrix_words(left, every)} all-reduced over data x fsdp")
        return out


def _matrix_words(names: list[str], every: list[str], what: str = "gradients") -> str:
    """`["kv", "q or out", "mlp"]` of a two-matrix MLP's model -> "the gradients of k and
    v, of one of q and out and of one MLP matrix"."""
    words = []
    for name in dict.fromkeys(names):
        n, of = names.count(name), every.count(name)
        words.append(
            {
                QO: "q and out" if n == 2 else "one of q and out",
                "kv": "k and v",
                "mlp": "every MLP matrix"
                if n == of and n > 1
                else ("one MLP matrix" if n == 1 else f"{n} MLP matrices"),
                "head": "the head",
            }[name]
        )
    said = " and of ".join(
        [", of ".join(words[:-1]), words[-1]] if len(words) > 1 else words
    )
    return f"the {what} of {said}"


def input_sums(model: Model, plan: Plan | None = None) -> int:
    """All-reduces over tensor per block for the input gradients of its first matrices:
    the plan's count, or one for q, one for k and v, one for up and one for a gate."""
    if plan is not None and plan.input_sums is not None:
        return plan.input_sums
    return 4 if model.gated else 3


def matrices(model: Model) -> tuple[str, ...]:
    """Each block's matrices and the head, as the gradient sums see them: a tied head is
    the embedding, but the compiled programs sum its gradient from the output layer apart
    from the one from the lookup (tests/docs_build/test_planner.py)."""
    mlp = ("mlp",) * (3 if model.gated else 2)
    return (QO, "kv", QO, *mlp, "head")


# The query and output projections are both d x d: a program's sums cannot tell them apart.
QO = "q or out"
# The transformer page's model's (MHA, a two-matrix MLP, its own head), and the most any
# model has (a gated MLP).
MATRICES = (QO, "kv", QO, "mlp", "mlp", "head")
LARGEST = (QO, "kv", QO, "mlp", "mlp", "mlp", "head")


def _matrix_sizes(model: Model, tensor: int) -> dict[str, float]:
    """Elements of each matrix's gradient on one device before the sum (tensor-split)."""
    d = model.d_model
    return {
        QO: d * d / tensor,
        "kv": 2 * d * model.kv * model.head_dim / tensor,
        "mlp": d * model.mlp / tensor,
        "head": d * model.vocab / tensor,
    }


# The plan the code asks for: gather the bf16 copies it casts, sum the gradients with
# reduce-scatters (ZeRO) in the bf16 its weight-gradient matmuls produce (the lowered step's
# dot_generals return bf16: tests/docs_build/test_planner.py), sum the bf16 activations of
# the matmuls. A compiled plan departs from it where the backend chose otherwise: the CPU
# backend promotes the gradient all-reduces to f32 (its all-reduce-promotion pass).
TEXTBOOK = Plan()


def _gradient_sum(plan_scatters: bool, layout: Layout, full: float) -> float:
    """Sum a gradient of `full` bytes over data x fsdp, as the plan does."""
    a, f = layout.data, layout.fsdp
    if plan_scatters and f > 1:
        return _ring("reduce-scatter", f, full) + _ring("all-reduce", a, full / f)
    return _ring("all-reduce", a * f, full)


FORMULAS = {
    "state": "P_dev x p x (1 + slots) + 4 x scalars + 4 x B/(data fsdp) x (S + 1), "
    "P_dev = (L M + E)/(fsdp tensor) + (2L + 1) d/fsdp, M = 2d^2 + 2dgk + (2 or 3) dm "
    "(g key/value heads of width k; 3 for a gated MLP), E = 2Vd (Vd when tied)",
    "state, tpu": "each array's block rounded up to the TPU's tiles (one dimension to a "
    "multiple of 128, another to 8, or 1, 2, 4 below 8; the pair that pads least), "
    "x p x (1 + slots) + 512 x scalars + the tokens' block, rounded the same way",
    "gathers": "(1 + remat) L x AG_fsdp(w_g M/tensor + 4 x 2d) "
    "+ AG_fsdp(4 Vd/tensor + w_g dV/tensor (untied) + 4d)",
    "gradients": "L x SUM(w_r M/tensor) + L x AR(4 x 2d) + AR(4 Vd/tensor + 4d) "
    "+ SUM(w_r dV/tensor) (untied), over data x fsdp",
    "activations": "L x (AR_t(4 T d) + (4 + resum + gated) AR_t(w_a T d)) + AR_t(4 T d) "
    "+ AR_t(w_a T d) + 3 AR_t(4 T), T = B S/(data fsdp) tokens",
    "loss": "AR_N(4)",
    "pipeline state": "the last stage's: ((L/stages (2d^2 + 2dgk + (2 or 3) dm) + Vd)"
    "/(fsdp tensor) + "
    "(2L/stages + 1) d/fsdp) x p x (1 + slots) + 4 x scalars + 4 x B/fsdp x (S + 1): "
    "its blocks, the final norm and the head (a tied head's copy too), split as a mesh "
    "splits them",
    "pipeline wire": "2 (M + stages - 1) x w_a B/(M fsdp) S d: each tick of the "
    "schedule, a microbatch's activations to the next stage and their gradients back, "
    "every device sending its fsdp share",
    "stage gathers": "the gathers above for the last stage: L/stages layers, a head and "
    "no embedding, over its fsdp, once per step (a schedule that gathers once per "
    "microbatch sends up to M times as much)",
    "stage gradients": "the gradients above for the last stage, summed over its fsdp",
    "stage activations": "the activations above for the last stage, over its tensor, "
    "T = B S/fsdp",
    "stage loss": "AR_(fsdp tensor)(4)",
}
# AG_n(V) = (n-1)/n V, AR_n(V) = 2 (n-1)/n V (ring model); SUM is an all-reduce over
# data x fsdp, or a reduce-scatter over fsdp and an all-reduce of the slice over data.


# A TPU stores each array in tiles: one dimension rounded up to a multiple of 128, another
# to a multiple of 8 (a smaller one to 1, 2 or 4), the pair the compiler picks being the one
# that pads least; a scalar takes 512 bytes.
TPU_MINOR, TPU_SECOND, TPU_SCALAR = 128, 8, 512
BACKENDS = ("cpu", "tpu")


def blocks(model: Model, layout: Layout) -> dict[str, tuple[int, ...]]:
    """Each parameter array's block on one device, as the page's RULES split it (the
    optimizer's slots have the same blocks)."""
    check(model, layout)
    if layout.stages > 1:
        raise CostModelError("blocks are for (data, fsdp, tensor) layouts")
    d, v, h, m, layers = (
        model.d_model,
        model.vocab,
        model.heads,
        model.mlp,
        model.layers,
    )
    f, t = layout.fsdp, layout.tensor
    k, g = d // h, model.kv
    found = {
        "embed": (v // t, d // f),
        "attn_norm": (layers, d // f),
        "q": (layers, d // f, h // t, k),
        "kv": (layers, 2, d // f, g // t, k),
        "out": (layers, h // t, k, d // f),
        "mlp_norm": (layers, d // f),
        "gate": (layers, d // f, m // t),
        "up": (layers, d // f, m // t),
        "down": (layers, m // t, d // f),
        "final_norm": (d // f,),
        "head": (d // f, v // t),
    }
    if not model.gated:
        del found["gate"]
    if model.tied:
        del found["head"]
    return found


def tiled(shape: tuple[int, ...]) -> int:
    """Elements a TPU stores for an array of `shape` (TPU_MINOR, TPU_SECOND)."""
    if not shape:
        return 1
    if len(shape) == 1:
        return -(-shape[0] // TPU_MINOR) * TPU_MINOR

    def second(n):
        return (
            n if n in (1, 2, 4) else 4 if n == 3 else -(-n // TPU_SECOND) * TPU_SECOND
        )

    total = math.prod(shape)
    return min(
        total
        // (shape[i] * shape[j])
        * second(shape[i])
        * (-(-shape[j] // TPU_MINOR) * TPU_MINOR)
        for i in range(len(shape))
        for j in range(len(shape))
        if i != j
    )


def state_bytes(model: Model, layout: Layout, backend: str = "cpu") -> float:
    """Bytes of the step's arguments on one device (FORMULAS["state"]; on a TPU,
    FORMULAS["state, tpu"])."""
    check(model, layout)
    if backend not in BACKENDS:
        raise CostModelError(f"backend must be cpu or tpu, not {backend!r}")
    slots, scalars = OPTIMIZERS[model.optimizer]
    d, p = model.d_model, model.param_bytes
    copies = p * (1 + slots)
    if backend == "tpu" and layout.stages == 1:
        rows = model.batch // (layout.data * layout.fsdp)
        held = sum(tiled(b) for b in blocks(model, layout).values())
        tokens = tiled((rows, model.seq + 1))
        return held * copies + TPU_SCALAR * scalars + INT32 * tokens
    f, t = layout.fsdp, layout.tensor
    if layout.stages > 1:  # the last stage: its blocks, the final norm and the head
        per = model.layers // layout.stages
        held = (per * model.layer_matrices + model.vocab * d) // (f * t) + (
            2 * per + 1
        ) * d // f
        tokens = model.batch // f * (model.seq + 1)
        return held * copies + INT32 * scalars + INT32 * tokens
    split_both = model.layers * model.layer_matrices + model.embeddings
    held = split_both // (f * t) + (2 * model.layers + 1) * d // f
    tokens = model.batch // (layout.data * f) * (model.seq + 1)
    return held * copies + INT32 * scalars + INT32 * tokens


def wire_terms(model: Model, layout: Layout, plan: Plan = TEXTBOOK) -> dict[str, float]:
    """Bytes one device sends per step, by term (FORMULAS), under `plan`."""
    check(model, layout)
    return _wire_terms(model, layout, plan)


def stage_model(model: Model, layout: Layout) -> Model:
    """A pipeline's last stage as a model of its own: its layers, the final norm and a
    head of its own (a tied head too: the last stage keeps a copy), no embedding."""
    return dataclasses.replace(
        model, layers=model.layers // layout.stages, tied=False, microbatches=1
    )


def _wire_terms(model: Model, layout: Layout, plan: Plan) -> dict[str, float]:
    """wire_terms without the check: the batch may be any positive number (the
    compute-bound threshold's straight lines, transformer_cost.compute_bound_batch)."""
    if layout.stages > 1:
        m, s, f = model.microbatches, layout.stages, layout.fsdp
        micro = model.batch / (m * f) * model.seq * model.d_model * plan.activations
        terms = {"pipeline wire": 2 * (m + s - 1) * micro}
        if f * layout.tensor > 1:
            stage = _mesh_terms(
                stage_model(model, layout), 1, f, layout.tensor, plan, embedding=False
            )
            terms |= {f"stage {k}": value for k, value in stage.items()}
        return terms
    return _mesh_terms(model, *layout.mesh, plan)


def _mesh_terms(
    model: Model, a: int, f: int, t: int, plan: Plan, embedding: bool = True
) -> dict[str, float]:
    """The wire terms of a (data, fsdp, tensor) mesh; without `embedding`, a pipeline's
    last stage, which has none to gather or sum."""
    d, v, layers = model.d_model, model.vocab, model.layers
    layout = Layout("", data=a, fsdp=f, tensor=t)
    lookup = 1 if embedding else 0
    remat = 0 if model.remat is False else 1  # every policy gathers the weights again
    # the recomputed output projection's sum, unless the policy keeps the projection
    resum = 0 if model.remat is False or model.remat in KEEPS_OUTPUT_PROJECTION else 1
    weights = model.layer_matrices / t
    head = 0 if model.tied else 1  # a tied head is the gathered embedding itself
    size = _matrix_sizes(model, t)
    # the backward pass's gathers (with remat): the regathered matrices in float32
    regathered = plan.gather * weights + sum(
        (F32 - plan.gather) * size[m] for m in plan.regather
    )
    head_width = plan.gather if plan.head_gather is None else plan.head_gather
    gather = "all-reduce" if f in plan.all_reduced_fsdp else "all-gather"
    gathers = (
        layers * _ring(gather, f, plan.gather * weights + F32 * 2 * d)
        + remat * layers * _ring(gather, f, regathered + F32 * 2 * d)
        + _ring(  # the embedding (float32, for the lookup), the head, the final norm
            gather,
            f,
            lookup * F32 * v * d / t + head * head_width * d * v / t + F32 * d,
        )
    )
    scattered = plan.scattered(model)
    summed = 0.0
    for name in matrices(model):
        if name == "head" and model.tied and not plan.head_apart:
            continue  # summed with the embedding's, below
        scatters = name in scattered
        if scatters:
            scattered.remove(name)
        times = 1 if name == "head" else layers
        summed += times * _gradient_sum(scatters, layout, plan.gradients * size[name])
    gradients = (
        summed
        + layers * _ring("all-reduce", a * f, F32 * 2 * d)
        + lookup * _gradient_sum(plan.embedding_scatter, layout, F32 * v * d / t)
        + _ring("all-reduce", a * f, F32 * d)
    )
    tokens = model.batch / (a * f) * model.seq
    block = tokens * d

    def sums(width):
        return _ring("all-reduce", t, width * block)

    # per block: one float32 sum, and in the activations' width the MLP's output, the
    # input gradients of the block's first matrices (input_sums), and with remat the
    # recomputed one
    per_block = 1 + input_sums(model, plan) + resum
    activations = (
        layers * (sums(plan.block_sum) + per_block * sums(plan.activations))
        + sums(F32)
        + sums(plan.activations)
        + 3 * _ring("all-reduce", t, F32 * tokens)
    )
    return {
        "gathers": gathers,
        "gradients": gradients,
        "activations": activations,
        "loss": _ring("all-reduce", a * f * t, F32),
    }


def wire_bytes(model: Model, layout: Layout, plan: Plan = TEXTBOOK) -> float:
    return sum(wire_terms(model, layout, plan).values())


def temporaries(model: Model, layout: Layout) -> None:
    """Activation and temporary bytes: not claimed. The compiled programs' temporaries
    depend on the backend's buffer assignment and fusion (the grid's CPU and TPU figures
    for one program differ several-fold), and no formula held them within a stated
    tolerance; the planner shows none rather than a guess."""
    check(model, layout)
    return None


@dataclass(frozen=True)
class Figures:
    """One row of the planner."""

    layout: Layout
    state: float
    wire: float
    terms: dict[str, float] = field(default_factory=dict)
    fits: bool = False  # the state fits the memory (temporaries not counted)


def plan_table(
    model: Model,
    devices: int,
    memory: float,
    plan: Plan = TEXTBOOK,
    backend: str = "cpu",
) -> list[Figures]:
    """Every layout of `devices` that divides the model, with its figures; a layout that
    does not divide is left out (check() says why for one)."""
    if not memory > 0:
        raise CostModelError(f"memory per device must be positive, not {memory!r}")
    rows = []
    for layout in layouts(devices):
        try:
            state = state_bytes(model, layout, backend)
        except CostModelError:
            continue
        terms = wire_terms(model, layout, plan)
        rows.append(
            Figures(
                layout=layout,
                state=state,
                wire=sum(terms.values()),
                terms=terms,
                fits=state <= memory,
            )
        )
    return rows


# ---------------------------------------------------------------- reading a compiled plan


def _width(collectives) -> int | None:
    found = {
        BF16 if any(s.startswith("bf16") for s in c["shapes"]) else F32
        for c in collectives
    }
    return min(found) if found else None


def _block_matrices(model: Model, sizes: dict[str, float]):
    """A function that names, by its size in elements, one of the model's block matrices
    not named yet (q and out, and the MLP's matrices, share a size), or None."""
    left = [n for n in matrices(model) if n != "head"]

    def take(elements: float) -> str | None:
        same = [n for n in left if sizes[n] == elements]
        if same:
            left.remove(same[0])
        return same[0] if same else None

    return take


def plan_of(entry: dict, model: Model) -> Plan:
    """The plan a compiled grid entry (docs_build/planner_grid.json) carried out.

    Collectives are told apart by their group: gathers over fsdp, gradient sums over
    data x fsdp, activation sums over tensor (the grid's meshes keep the three sizes
    apart); a width or kind the program does not show is the textbook's."""
    a, f, t = entry["mesh"]
    if f > 1 and f in (a * f, t) and a * f == t:
        raise CostModelError(f"cannot tell the groups of {entry['mesh']} apart")
    big = [c for c in entry["collectives"] if _rank(c) >= 2]
    gathers = [c for c in big if c["kind"] == "all-gather" and c["group_size"] == f]
    sum_groups = {a * f, f} - {t}  # the gradient sums' groups: data x fsdp, or fsdp

    def gradient_sum(c):
        return (
            c["kind"] in ("all-reduce", "reduce-scatter")
            and c["group_size"] in sum_groups
        )

    gradient_sums = [c for c in big if gradient_sum(c)]
    activation_sums = [
        c for c in big if c["kind"] == "all-reduce" and c["group_size"] == t
    ]
    sizes = _matrix_sizes(model, t)
    scatter, embedding_scatter = TEXTBOOK.scatter, False
    if f > 1:  # without fsdp, every gradient is all-reduced under any plan
        take, found = _block_matrices(model, sizes), []
        # summed once per step: the head's gradient (in bf16 where the head's is), and
        # the embedding's in float32
        head_too = any(
            shape.startswith("bf16")
            for c in gradient_sums
            if c["kind"] == "reduce-scatter" and c["runs"] == 1
            for shape in c["shapes"]
        )
        for c in gradient_sums:
            if c["kind"] != "reduce-scatter":
                continue
            for shape in c["shapes"]:
                once = c["runs"] == 1
                if once and shape.startswith("f32") and (model.tied or head_too):
                    embedding_scatter = (
                        True  # the float32 embedding's, beside the head's
                    )
                elif once:
                    found.append("head")
                elif name := take(math.prod(hlo.arrays(shape)[0][1]) * c["group_size"]):
                    found.append(name)
                else:
                    raise CostModelError(f"a reduce-scatter of {shape}: no such matrix")
        scatter = tuple(sorted(found, key=LARGEST.index))
    regather, head_gather, gather = [], None, _width(gathers) or TEXTBOOK.gather
    if f > 1 and gather == BF16:  # what is gathered in float32 beside the bf16 copies
        take, heads = _block_matrices(model, sizes), 0
        for c in gathers:
            for shape in c["shapes"]:
                dtype, dims = hlo.arrays(shape)[0]
                elements = math.prod(dims)
                if dtype != "f32":
                    continue
                if c["runs"] == model.layers and (name := take(elements)):
                    regather.append(name)
                elif c["runs"] == 1 and elements == sizes["head"]:
                    heads += 1  # the embedding's, and the head's when it is float32
        if heads == 2 and not model.tied:
            head_gather = F32
    head_apart = True
    if model.tied and a * f > 1:  # one sum of a head-sized gradient, or two
        once = [
            s
            for c in entry["collectives"]  # flattened sums are rank 1: every one
            if c["runs"] == 1 and gradient_sum(c)
            for s in c["shapes"]
            if math.prod(hlo.arrays(s)[0][1])
            * (c["group_size"] if c["kind"] == "reduce-scatter" else 1)
            >= sizes["head"]
        ]
        head_apart = len(once) > 1
    # each block's sums over tensor: one float32 (bf16 on GPU), the MLP's output, the
    # inputs', remat's
    per_block = [
        s for c in activation_sums if c["runs"] == model.layers for s in c["shapes"]
    ]
    block_sum = TEXTBOOK.block_sum
    if t > 1 and not any(s.startswith("f32") for s in per_block):
        block_sum = BF16
    sums = None
    if t > 1:
        resum = model.remat is not False and model.remat not in KEEPS_OUTPUT_PROJECTION
        sums = len(per_block) - 2 - (1 if resum else 0)
        if sums == input_sums(model):
            sums = None  # the textbook's
    return Plan(
        gather=gather,
        gradients=_width(gradient_sums) or TEXTBOOK.gradients,
        activations=_width(activation_sums) or TEXTBOOK.activations,
        scatter=scatter,
        input_sums=sums,
        embedding_scatter=embedding_scatter,
        regather=tuple(sorted(regather, key=LARGEST.index)),
        head_gather=head_gather,
        block_sum=block_sum,
        head_apart=head_apart,
        # FSDP without a gather: the weights came by all-reduces over fsdp
        all_reduced_fsdp=(f,) if f > 1 and not gathers else (),
    )


def _rank(collective: dict) -> int:
    return max(len(dims) for _, dims in map(_dims, collective["shapes"]))


def _dims(shape: str) -> tuple[str, tuple[int, ...]]:
    dtype, dims = hlo.arrays(shape)[0]
    return dtype, tuple(n for n in dims if n > 1)


def model_of(grid: dict, config: str) -> Model:
    """The planner's Model for a grid configuration."""
    c = grid["configs"][config]
    fields = ("vocab", "d_model", "heads", "mlp", "layers", "seq", "batch", "remat")
    options = ("kv_heads", "gated", "tied")
    return Model(**{k: c[k] for k in fields}, **{k: c[k] for k in options if k in c})


def entry_layout(entry: dict) -> Layout:
    a, f, t = entry["mesh"]
    return Layout(name_of(a, f, t), data=a, fsdp=f, tensor=t)


def against_compiled(grid: dict, entry: dict) -> dict[str, tuple[float, float]]:
    """Each checked figure of a grid entry: (the formula under the program's own plan, the
    compiled program's figure). The tests hold each pair to TOLERANCE; the page quotes the
    largest gap."""
    model, layout = model_of(grid, entry["config"]), entry_layout(entry)
    from docs_build.compiled.targets import family

    # a TPU pads arrays to tiles; the CPU's and a GPU's are as they are
    backend = "tpu" if family(entry["target"]) == "tpu" else "cpu"
    return {
        "state": (
            state_bytes(model, layout, backend),
            entry["memory"]["argument_bytes"],
        ),
        "wire": (
            wire_bytes(model, layout, plan_of(entry, model)),
            sum(s["wire_bytes"] for s in entry["summary"].values()),
        ),
    }
