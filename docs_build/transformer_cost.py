"""Activation memory, FLOPs and a lower bound on the time of the transformer page's train step.

The strategy planner (docs_build.planner) prices a layout's state and wire bytes; this module
adds, per device and per layout of a (data, fsdp, tensor) mesh:

- `residual_bytes`: what the program asks to keep for the backward pass, term by term, exactly
  as `jax.ad_checkpoint.print_saved_residuals` lists it for the page's `loss_fn`
  (tests/docs_build/test_transformer_cost.py compares the two on small configs);
- `activation_bytes`: the planner's figure: under the page's remat (each layer recomputed) the
  layer inputs the scan keeps plus one layer's intermediates while it is recomputed; without
  remat every layer's intermediates; plus the largest transients, the logits and one layer's
  bfloat16 weights (gathered whole along "embed" under FSDP);
- `temp_bytes`: the compiled program's temporaries at their peak, by phase: the activations
  above plus the buffers the compiler keeps beside them (gradient accumulators, the
  embedding's gradient, the head's bfloat16 copy). Held to `memory.temp_bytes` of the CPU and
  H100 entries (8, 16 and 64 GPUs) of docs_build/planner_grid.json within `TOLERANCE` (per
  backend), except the entries `EXCLUDED` names with their reason. TPU: unchecked
  (`UNCHECKED`).
- `step_flops`: the step's FLOPs (forward and backward products with attention's QK^T and
  AV, remat's recomputation, the head, AdamW); `counted_flops`: the same as XLA's
  `cost_analysis()` counts them, a scan's body once (held to the compiled rows of
  results/cpu.json and tpu.json within `FLOPS_TOLERANCE`);
- `time_bound`: compute at the published bf16 peak and each network's bytes
  (planner.wire_terms) at its published rate, as a steptime.Bound; `compute_bound_batch`:
  the sequences per device above which a layout is compute-bound.

Run `python -m docs_build.transformer_cost` to print every checked entry, the largest
disagreement per backend, the FLOPs checks and the real H100's step against its bound.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

from docs_build import planner as pl
from docs_build import steptime
from docs_build.costmodel import F32, CostModelError

HERE = Path(__file__).resolve().parent
BF16 = pl.BF16
INT32 = 4
BOOL = 1

# The backends whose compiled temporaries the formula is held to, and the grid target that
# holds it; and those it is not.
CHECKED = {"cpu": "cpu", "gpu": "h100:1x8"}
UNCHECKED = {
    "tpu": "unchecked on TPU: its temp bytes do not hold the step's buffers (v5e:2x4, the "
    "gqa config on (1, 1, 8): 7.2 MiB of temporaries, less than the 32 MiB of layer "
    "inputs the scan keeps for the backward pass, beside a peak of 111.9 MiB and 23.0 MiB "
    "of arguments)"
}
BACKENDS = (*CHECKED, *UNCHECKED)
# How far temp_bytes may be from a checked entry's memory.temp_bytes, as a fraction of it
# (measured: `python -m docs_build.transformer_cost` prints every entry and the largest gap;
# 8.5% on CPU, 17.9% on the H100, over its 8, 16 and 64 GPUs).
TOLERANCE = {"cpu": 0.10, "gpu": 0.20}
# Entries of the grid not held to TOLERANCE, by (backend, config), with why.
# (The H100 node does not compile "tiny": planner_grid.SKIPPED.)
EXCLUDED = {
    ("cpu", "tiny"): (
        "the smallest config (temporaries of 9 to 17 MiB) is mostly small buffers and the "
        "gaps the compiler's heap leaves between them, which no term models: on CPU, mesh "
        "(8, 1, 1), the most temporaries live at once is 12.7 MB of the 17.5 MB allocated"
    )
}
# How far counted_flops may be from a compiled program's cost_analysis() flops (CPU and
# TPU rows of the page's step; measured 0.45% to 0.57% below: the elementwise work it
# leaves out).
FLOPS_TOLERANCE = 0.01
# AdamW's FLOPs per parameter as XLA's cost_analysis counts optax.adamw's update and its
# application on CPU (tests/docs_build/test_transformer_cost.py compiles it).
ADAMW_FLOPS = 15
OPTIMIZER_FLOPS = {"adamw": ADAMW_FLOPS}


def _sizes(model: pl.Model, layout: pl.Layout) -> tuple[int, int, int, int]:
    """(b, T, t, f) for a (data, fsdp, tensor) layout that divides the model."""
    if not isinstance(model, pl.Model):
        raise CostModelError(f"model must be a planner Model, not {model!r}")
    if not isinstance(layout, pl.Layout):
        raise CostModelError(f"layout must be a planner Layout, not {layout!r}")
    if layout.stages > 1:
        raise CostModelError(
            "activations, FLOPs and time are modelled for (data, fsdp, tensor) layouts: "
            "the transformer step has no pipeline; give data, fsdp and tensor sizes"
        )
    pl.check(model, layout)  # says what to change when an axis does not divide
    b = model.batch // (layout.data * layout.fsdp)
    return b, b * model.seq, layout.tensor, layout.fsdp


def _backend(backend: str) -> str:
    if backend not in BACKENDS:
        raise CostModelError(f"backend must be one of {BACKENDS}, not {backend!r}")
    return backend


def checked(backend: str) -> bool:
    """Whether temp_bytes is held to compiled programs of `backend` (TPU: unchecked)."""
    return _backend(backend) in CHECKED


def _scores(model: pl.Model, layout: pl.Layout) -> int:
    """Elements of one layer's attention scores on one device: b x heads/t x S x S (XLA's
    attention computes every pair; the causal mask only zeroes half of them)."""
    b, _, t, _ = _sizes(model, layout)
    return b * (model.heads // t) * model.seq**2


# ------------------------------------------------------------ what the program keeps


def layer_residuals(model: pl.Model, layout: pl.Layout) -> dict[str, int]:
    """Bytes one layer keeps for its backward pass on one device, by what they are, as
    print_saved_residuals lists them for a layer without remat:

    - "stream": the float32 residual stream (whole on every tensor device): the layer's
      input, its normalised copy, and the same two for the MLP half (4 x T d); the four
      float32 (T, 1) factors of the two norms; their two (1, 1, d) scales broadcast; the
      two bfloat16 (T, d) inputs of the products;
    - "heads": bfloat16 q and the attention's context (T x heads/t x k each), k and v
      (T x kv_heads/t x k each);
    - "scores": the attention probabilities in float32 and in bfloat16 (b x heads/t x S x
      S), and the softmax's two float32 (b x heads/t x S) statistics;
    - "mlp": bfloat16 (T, mlp/t) arrays: 5 with GELU (the up product, three inside GELU,
      its output), 6 with SwiGLU;
    - "weights": the layer's matrices in bfloat16, whole along "embed", split by tensor.
    """
    b, T, t, _ = _sizes(model, layout)
    d, k = model.d_model, model.head_dim
    heads, kv = model.heads // t, model.kv // t
    return {
        "stream": 4 * F32 * T * d + 4 * F32 * T + 2 * F32 * d + 2 * BF16 * T * d,
        "heads": 2 * BF16 * T * heads * k + 2 * BF16 * T * kv * k,
        "scores": (F32 + BF16) * _scores(model, layout)
        + 2 * F32 * b * heads * model.seq,
        "mlp": (6 if model.gated else 5) * BF16 * T * (model.mlp // t),
        "weights": BF16 * model.layer_matrices // t,
    }


def residual_bytes(
    model: pl.Model, layout: pl.Layout, remat: bool | None = None
) -> dict[str, int]:
    """Bytes the step's loss keeps for its backward pass on one device, by term: what
    print_saved_residuals lists, less the parameters (the step's arguments).

    - "layers": with remat, the float32 input of each layer that the scan stacks (L x T x
      d); without, every layer's `layer_residuals`;
    - "mask": without remat, the causal mask each layer shares (a bool and a float32
      b x heads/t x S x S; with remat each layer builds it again);
    - "final norm": the scan's float32 output, the final norm's float32 normalised copy,
      two (T, 1) factors, its scale broadcast, the bfloat16 (T, d) input of the head;
    - "head": the head's bfloat16 copy (d x vocab/t), or the tied embedding's;
    - "loss": the log-probabilities and the one-hot targets (float32, T x vocab/t), the
      log-softmax's (T, 1) statistic, and the int32 (T, 1) token indices of the lookup.
    """
    _, T, t, _ = _sizes(model, layout)
    remat = model.remat if remat is None else remat
    d, v, layers = model.d_model, model.vocab // t, model.layers
    if remat:
        kept = {"layers": layers * F32 * T * d, "mask": 0}
    else:
        kept = {
            "layers": layers * sum(layer_residuals(model, layout).values()),
            "mask": (BOOL + F32) * _scores(model, layout),
        }
    return kept | {
        "final norm": 2 * F32 * T * d + 2 * F32 * T + F32 * d + BF16 * T * d,
        "head": BF16 * d * v,
        "loss": 2 * F32 * T * v + F32 * T + INT32 * T,
    }


# The remat policies of the transformer page's model (Config.remat, model.REMAT_POLICIES)
# that policy_residuals knows, and the one that moves what it saves to host memory.
POLICIES = (False, True, *pl.REMAT_POLICIES)
OFFLOADED = ("offload",)
# What each policy keeps of a layer beside its input (policy_residuals' terms); "offload"
# keeps "names"'s, in host memory (offloaded_residuals).
POLICY_SAVES = {
    True: (),
    "full": (),
    "dots": ("q, k, v", "scores", "context", "out", "mlp"),
    "dots_no_batch": ("q, k, v", "out", "mlp"),
    "names": ("q, k, v", "context"),
    "offload": (),
}


def policy_residuals(
    model: pl.Model, layout: pl.Layout, policy: bool | str
) -> dict[str, int]:
    """Bytes one layer keeps for its backward pass on one device under a remat `policy`,
    by term, as print_saved_residuals lists them for one `Block` (its parameters and the
    literals aside). False: `layer_residuals` and the causal mask (which the whole model
    shares between layers); otherwise the float32 input and what the policy saves:

    - "q, k, v": bfloat16 (T x (heads + 2 kv_heads)/t x k): "dots", "dots_no_batch" (their
      products have no batch dimension), "names" and "offload" (tagged "qkv");
    - "scores": the float32 QK^T product (b x heads/t x S x S): "dots" only (a batched
      product);
    - "context": the bfloat16 attention output (T x heads/t x k): "dots" (the batched AV
      product), "names" and "offload" (tagged "context");
    - "out": the attention's output projection, bfloat16 (T x d): "dots", "dots_no_batch";
    - "mlp": the MLP's first product(s), bfloat16 (T x mlp/t; two with SwiGLU): "dots",
      "dots_no_batch" (the down projection's output is the layer's: nothing needs it).
    "offload" keeps only the input on the device: its other terms go to host memory
    (`offloaded_residuals`)."""
    _, T, t, _ = _sizes(model, layout)
    if policy not in POLICIES:
        raise CostModelError(f"policy must be one of {POLICIES}, not {policy!r}")
    if policy is False:
        return layer_residuals(model, layout) | {
            "mask": (BOOL + F32) * _scores(model, layout)
        }
    d, k = model.d_model, model.head_dim
    heads, kv, mlp = model.heads // t, model.kv // t, model.mlp // t
    every = {
        "q, k, v": BF16 * T * (heads + 2 * kv) * k,
        "scores": F32 * _scores(model, layout),
        "context": BF16 * T * heads * k,
        "out": BF16 * T * d,
        "mlp": (2 if model.gated else 1) * BF16 * T * mlp,
    }
    return {"input": F32 * T * d} | {name: every[name] for name in POLICY_SAVES[policy]}


def offloaded_residuals(
    model: pl.Model, layout: pl.Layout, policy: bool | str
) -> dict[str, int]:
    """Bytes one layer's policy sends to host memory on one device ("offload": the
    tensors "names" keeps on the device); {} for the other policies."""
    if policy not in OFFLOADED:
        policy_residuals(model, layout, policy)  # refuses an unknown policy
        return {}
    kept = policy_residuals(model, layout, "names")
    del kept["input"]
    return kept


def policy_temp_bytes(
    model: pl.Model, layout: pl.Layout, policy: bool | str, backend: str = "cpu"
) -> int:
    """The step's temporaries on one device under a remat `policy`: temp_bytes with each
    layer recomputed (False: without remat), plus what the policy saves beyond each
    layer's input, for every layer (policy_residuals on the device). On the CPU, whose
    host memory is its memory, "offload" keeps what "names" keeps: the compiled CPU step
    has no host-memory buffer. Held to the compiled steps within POLICY_TOLERANCE
    (tests/advanced/remat/test_policies.py) and, for the strategy planner, within
    TOLERANCE (tests/docs_build/test_planner_remat.py)."""
    if policy is False:
        return temp_bytes(dataclasses.replace(model, remat=False), layout, backend)
    if policy in OFFLOADED and _backend(backend) == "cpu":
        policy = "names"
    saved = policy_residuals(model, layout, policy)
    extra = sum(saved.values()) - saved["input"]
    full = temp_bytes(dataclasses.replace(model, remat=True), layout, backend)
    return full + model.layers * extra


def host_bytes(
    model: pl.Model, layout: pl.Layout, policy: bool | str, backend: str = "gpu"
) -> int:
    """Bytes the step keeps in host memory on one device's behalf under `policy`: what
    "offload" sends there for every layer (offloaded_residuals); 0 for the other
    policies, and on the CPU (one memory: policy_temp_bytes counts them on the device)."""
    per_layer = sum(offloaded_residuals(model, layout, policy).values())
    return 0 if _backend(backend) == "cpu" else model.layers * per_layer


# How far policy_temp_bytes may be from a compiled step's temporaries, as a fraction, for
# the policies that remat (tests/advanced/remat: the page's config on its 8 CPU devices;
# measured from -1.1% ("dots") to +3.9% (full remat); "offload" as "names", +3.6%: the
# CPU keeps offloaded tensors in its one memory). Without remat temp_bytes is held to the grid; at the page's tiny
# size it is 15% low, as the grid's EXCLUDED "tiny" config is.
POLICY_TOLERANCE = {"cpu": 0.10}


# The logits' buffers around the loss, per (T x vocab/t) element, as the compiled programs
# hold them at once: CPU, the float32 log-probabilities and their exponentials and the
# bfloat16 gradient for the head's products (the one-hot targets are not stored: compared
# with the tokens where used); the H100, one float32 (the fused softmax) and the bfloat16
# logits the head's product returns.
LOGITS = {"cpu": 2 * F32 + BF16, "gpu": F32 + BF16, "tpu": 2 * F32 + BF16}


def activation_bytes(
    model: pl.Model,
    layout: pl.Layout,
    remat: bool | None = None,
    backend: str = "cpu",
) -> dict[str, int]:
    """Per device, what the step keeps for the backward pass and its largest transients.

    - "kept": the layers' residuals (with remat, the layer inputs the scan keeps; without,
      every layer's intermediates and the shared mask) and the final norm's;
    - "recomputed layer": with remat, one layer's intermediates while it is recomputed in
      the backward pass (`layer_residuals`, less its weights; 0 without remat);
    - "layer weights": one layer's bfloat16 weights (whole along "embed": what FSDP
      gathers); without remat they are among "kept", for every layer;
    - "logits": the buffers of batch x seq x vocab around the loss, over the axes that
      split them (b x S x vocab/t per device; `LOGITS` per backend).
    The compiled programs keep more beside these (gradients: `temp_bytes`)."""
    _, T, t, _ = _sizes(model, layout)
    backend = _backend(backend)
    remat = model.remat if remat is None else remat
    kept = residual_bytes(model, layout, remat)
    layer = layer_residuals(model, layout)
    weights = layer.pop("weights")
    return {
        "kept": kept["layers"] + kept["mask"] + kept["final norm"],
        "recomputed layer": sum(layer.values()) if remat else 0,
        "layer weights": weights if remat else 0,
        "logits": LOGITS[backend] * T * (model.vocab // t),
    }


def gradient_bytes(
    model: pl.Model, layout: pl.Layout, backend: str = "cpu"
) -> dict[str, int]:
    """The gradient buffers the compiled programs keep beside the activations, per device:

    - "layer gradients": the float32 accumulators of every layer's matrix gradients, as the
      backward scan fills them: the device's fsdp x tensor share (4 L M / (fsdp tensor));
    - "embedding gradient": float32, vocab/t x d (whole along d: the CPU sums it whole);
    - "head gradient": bfloat16, d x vocab/t; on the H100 with fsdp > 1 its
      reduce-scattered share (d/fsdp x vocab/t: its plan).
    """
    _, _, t, f = _sizes(model, layout)
    d, v = model.d_model, model.vocab // t
    head = BF16 * d * v
    if _backend(backend) == "gpu":
        head //= f
    return {
        "layer gradients": F32 * model.layers * model.layer_matrices // (f * t),
        "embedding gradient": F32 * v * d,
        "head gradient": head,
    }


def temp_phases(
    model: pl.Model, layout: pl.Layout, backend: str = "cpu"
) -> dict[str, dict[str, int]]:
    """The temporaries live at once in the two phases where the compiled step peaks:

    - "loss": the kept activations, the logits' buffers, the head's bfloat16 copy (d x
      vocab/t, whole along d), and on CPU the gradient accumulators and the embedding's
      gradient (allocated before the loss; the H100 allocates them later, each in a place
      the logits held);
    - "layer": backward through one layer: the layers' kept activations (the final norm's
      are spent by then), the gradient buffers, the scores' two float32 gradients (b x
      heads/t x S x S each), and with remat the layer recomputed and its bfloat16 weights.
      The H100 also keeps the causal mask's bool, made once before the loop (its float32
      copy shares its place with other buffers: the memory-usage reports XLA dumps for
      the grid's h100:1x8 "page" program on (2, 2, 2) and for the 64-GPU Llama-3-8B
      program), not the embedding's gradient (made after the loop), and its fused MLP
      keeps 2 (GELU) or 3 (SwiGLU) of the (T, mlp/t) arrays, not 5 or 6.
    temp_bytes is the larger phase."""
    _, T, t, _ = _sizes(model, layout)
    backend = _backend(backend)
    acts = activation_bytes(model, layout, backend=backend)
    grads = gradient_bytes(model, layout, backend)
    scores = _scores(model, layout)
    head_copy = BF16 * model.d_model * (model.vocab // t)
    kept = acts["kept"] - residual_bytes(model, layout)["final norm"]
    loss = {"kept": acts["kept"], "logits": acts["logits"], "head copy": head_copy}
    layer = {"kept": kept, **grads, "scores' gradients": 2 * F32 * scores}
    if model.remat:
        layer |= {
            "recomputed layer": acts["recomputed layer"],
            "layer weights": acts["layer weights"],
        }
    if backend != "gpu":
        loss |= {k: grads[k] for k in ("layer gradients", "embedding gradient")}
        return {"loss": loss, "layer": layer}
    del layer["embedding gradient"]
    if model.remat:
        unfused = layer_residuals(model, layout)["mlp"]
        fused = (3 if model.gated else 2) * BF16 * T * (model.mlp // t)
        layer["recomputed layer"] += fused - unfused
        layer["mask"] = BOOL * scores
    return {"loss": loss, "layer": layer}


def temp_bytes(model: pl.Model, layout: pl.Layout, backend: str = "cpu") -> int:
    """The step's temporaries on one device: the larger of temp_phases."""
    return max(sum(p.values()) for p in temp_phases(model, layout, backend).values())


# ------------------------------------------------------------ held to the compiled grid


def grid() -> dict:
    from docs_build import planner_grid

    return json.loads(planner_grid.RESULTS.read_text())


def backend_of(target: str) -> str:
    from docs_build.compiled.targets import family

    return family(target)


def against_compiled(grid_: dict, entry: dict) -> tuple[int, int]:
    """(temp_bytes by formula, the compiled entry's memory.temp_bytes)."""
    model, layout = pl.model_of(grid_, entry["config"]), pl.entry_layout(entry)
    backend = backend_of(entry["target"])
    return temp_bytes(model, layout, backend), entry["memory"]["temp_bytes"]


def peak_phase(grid_: dict, entry: dict) -> str:
    """The phase of temp_phases that gives an entry's temp_bytes."""
    model, layout = pl.model_of(grid_, entry["config"]), pl.entry_layout(entry)
    phases = temp_phases(model, layout, backend_of(entry["target"]))
    return max(phases, key=lambda name: sum(phases[name].values()))


def checked_entries(grid_: dict) -> list[dict]:
    """The grid's entries of the checked backends (every device count), less those
    EXCLUDED."""
    return [
        e
        for e in grid_["entries"]
        if backend_of(e["target"]) in CHECKED
        and (backend_of(e["target"]), e["config"]) not in EXCLUDED
    ]


def largest_disagreement(grid_: dict, backend: str) -> tuple[float, dict]:
    """The largest |formula / compiled - 1| of the backend's checked entries, and its entry."""
    found = [
        (abs(formula / compiled - 1), e)
        for e in checked_entries(grid_)
        if backend_of(e["target"]) == backend
        for formula, compiled in [against_compiled(grid_, e)]
    ]
    return max(found, key=lambda pair: pair[0])


# ------------------------------------------------------------------------------ FLOPs


def _layer_forward(model: pl.Model, tokens: int, sequences: int) -> dict[str, float]:
    """One layer's forward products over `tokens` tokens of `sequences` sequences."""
    d = model.d_model
    return {
        "projections": 2 * tokens * model.layer_matrices,
        # QK^T and AV, every (query, key) pair: 2 x S x S x d each per sequence
        "attention": 2 * 2 * sequences * model.seq**2 * d,
        "down": 2
        * tokens
        * d
        * model.mlp,  # the layer's last product, among projections
    }


def recomputed_flops(
    model: pl.Model, tokens: int, sequences: int, policy: bool | str
) -> int:
    """One layer's forward products that a remat `policy` runs again in the backward pass
    (tokens of `sequences` sequences): full remat, all but the MLP's down projection (its
    output is not needed, and the compiler drops it); "dots", none (every product's output
    is kept); "dots_no_batch", attention's QK^T and AV (batched products); "names" and
    "offload", QK^T (the softmax's probabilities are not kept), the output projection and
    the MLP's first product(s) (the MLP's input needs the attention's output added in)."""
    if policy not in POLICIES:
        raise CostModelError(f"policy must be one of {POLICIES}, not {policy!r}")
    layer = _layer_forward(model, tokens, sequences)
    if policy is False or policy == "dots":
        return 0
    if policy == "dots_no_batch":
        return layer["attention"]
    if policy in ("names", "offload"):
        d, first = model.d_model, 2 if model.gated else 1
        scores = 2 * sequences * model.seq**2 * d  # QK^T: half of "attention"
        return scores + 2 * tokens * d * d + first * 2 * tokens * d * model.mlp
    return layer["projections"] + layer["attention"] - layer["down"]


def step_flops(model: pl.Model, remat: bool | str | None = None) -> dict[str, float]:
    """The training step's FLOPs, all devices together, by term:

    - "forward": each layer's products (q, k, v, out, the MLP's: 2 x tokens x M) and
      attention's QK^T and AV (2 x 2 x B x S^2 x d), and the head (2 x tokens x d x V);
    - "backward": twice the forward (each product's input and weight gradients; the first
      layer's input gradient too, which the embedding's gradient needs);
    - "recompute": with remat, each layer's forward again, less its last product (the MLP's
      down projection: its output is not needed to differentiate the layer, and the
      compiler drops it); under a policy, what it runs again (`recomputed_flops`);
    - "optimizer": AdamW's update, ADAMW_FLOPS per parameter.
    The embedding lookup and the elementwise work are left out (cost_analysis counts them:
    under 1% of the page's step)."""
    if not isinstance(model, pl.Model):
        raise CostModelError(f"model must be a planner Model, not {model!r}")
    remat = model.remat if remat is None else remat
    tokens = model.batch * model.seq
    layer = _layer_forward(model, tokens, model.batch)
    head = 2 * tokens * model.d_model * model.vocab
    forward = model.layers * (layer["projections"] + layer["attention"]) + head
    recompute = recomputed_flops(model, tokens, model.batch, remat)
    if model.optimizer not in OPTIMIZER_FLOPS:
        raise CostModelError(
            f"the optimizer's FLOPs are measured for {sorted(OPTIMIZER_FLOPS)}, not "
            f"{model.optimizer!r}"
        )
    return {
        "forward": forward,
        "backward": 2 * forward,
        "recompute": model.layers * recompute,
        "optimizer": OPTIMIZER_FLOPS[model.optimizer] * model.params,
    }


def model_flops(model: pl.Model) -> float:
    """The step's FLOPs without remat's recomputation or the optimizer: what MFU counts."""
    f = step_flops(model, remat=False)
    return f["forward"] + f["backward"]


def updated_params(model: pl.Model, layout: pl.Layout) -> float:
    """Parameters one device's optimizer updates: its share of the matrices and the
    embeddings (over fsdp x tensor), and of the norms (over fsdp)."""
    _sizes(model, layout)
    f, t = layout.fsdp, layout.tensor
    matrices = model.layers * model.layer_matrices + model.embeddings
    return matrices / (f * t) + (2 * model.layers + 1) * model.d_model / f


def device_flops(model: pl.Model, layout: pl.Layout) -> dict[str, float]:
    """step_flops on one device: the products split evenly over every device (batch over
    data x fsdp; heads, MLP and vocabulary over tensor), the optimizer over its share."""
    _sizes(model, layout)
    total = step_flops(model)
    n = layout.devices
    per = {k: v / n for k, v in total.items() if k != "optimizer"}
    per["optimizer"] = OPTIMIZER_FLOPS[model.optimizer] * updated_params(model, layout)
    return per


def counted_flops(model: pl.Model, layout: pl.Layout) -> float:
    """device_flops as XLA's cost_analysis() counts them: the layers run in a scan (a
    while loop), whose body it counts once, not once per layer: one layer's forward,
    backward (twice the forward) and recomputation, the head's three products, the
    optimizer."""
    _sizes(model, layout)
    n = layout.devices
    layer = _layer_forward(model, model.batch * model.seq, model.batch)
    one = (layer["projections"] + layer["attention"]) / n
    head = 2 * model.batch * model.seq * model.d_model * model.vocab / n
    recompute = recomputed_flops(
        model, model.batch * model.seq, model.batch, model.remat
    )
    recompute /= n
    return 3 * one + 3 * head + recompute + device_flops(model, layout)["optimizer"]


def pipeline_flops(model: pl.Model, layout: pl.Layout) -> float:
    """FLOPs one device of a pipeline's last stage spends on the step, counted at the
    length of the schedule: its layers' and the head's forward, backward and remat's
    recomputation (step_flops of the stage, split over fsdp x tensor), stretched by
    the bubble, (M + stages - 1)/M for M microbatches (a device idles stages - 1 of the
    schedule's M + stages - 1 ticks), and the optimizer's update of its share of the
    stage's parameters."""
    if layout.stages == 1:
        raise CostModelError("pipeline_flops is for a pipeline's layouts")
    stage = pl.stage_model(model, layout)
    f, t = layout.fsdp, layout.tensor
    total = step_flops(stage)
    work = (total["forward"] + total["backward"] + total["recompute"]) / (f * t)
    m, s = model.microbatches, layout.stages
    per = stage.layers
    updated = (per * model.layer_matrices + model.vocab * model.d_model) / (f * t) + (
        2 * per + 1
    ) * model.d_model / f
    return work * (m + s - 1) / m + OPTIMIZER_FLOPS[model.optimizer] * updated


def step_device_flops(model: pl.Model, layout: pl.Layout) -> float:
    """The FLOPs the time bound prices on one device: device_flops summed, or a
    pipeline's pipeline_flops."""
    if layout.stages > 1:
        return pipeline_flops(model, layout)
    return sum(device_flops(model, layout).values())


# ------------------------------------------------------------------------------- time


def networks(
    model: pl.Model,
    layout: pl.Layout,
    chip: str,
    per_node: int | None = None,
    plan: pl.Plan = pl.TEXTBOOK,
) -> dict[str, float]:
    """Bytes one device sends per step over each network of `chip` (planner.wire_terms).

    `per_node`: devices joined by the fast links (a TPU slice's ICI, a GPU node's NVLink);
    None: every device of the layout (8 devices: one node or slice). The mesh's devices are
    numbered with tensor fastest, then fsdp, then data, `per_node` to a node: a term's
    collectives run over tensor (activations), fsdp (gathers), data x fsdp (gradients) or
    every device (the loss); a group that spans nodes is a ring through the network
    between them, and every byte of it is priced at that network's rate (a ring goes at
    its slowest link's pace)."""
    if layout.stages > 1:
        pl.check(model, layout)
    else:
        _sizes(model, layout)
    return _networks(model, layout, chip, per_node, plan)


def _networks(model, layout, chip, per_node, plan) -> dict[str, float]:
    """networks without the check (compute_bound_batch's lines)."""
    links = steptime.chip(chip)
    within, between = steptime.FAMILY_NETWORKS[links.within_name]
    n = layout.devices
    if per_node is None:
        per_node = n
    if isinstance(per_node, bool) or not isinstance(per_node, int) or per_node < 1:
        raise CostModelError(f"per_node must be a positive integer, not {per_node!r}")
    a, f, t = layout.mesh
    span = {  # how many consecutive devices each term's group spans
        "activations": t,
        "gathers": f * t,
        "gradients": a * f * t,
        "loss": a * f * t,
        # a pipeline: stages outermost, so a stage is f x t consecutive devices; once
        # the devices span nodes, some stage's sends to the next cross between them
        "pipeline wire": n,
        "stage gathers": f * t,
        "stage gradients": f * t,
        "stage activations": t,
        "stage loss": f * t,
    }
    if n > per_node and per_node % t and t % per_node:
        raise CostModelError(
            f"tensor {t} does not tile nodes of {per_node} devices: make one divide the other"
        )
    sent = {within: 0.0, between: 0.0}
    for term, value in pl._wire_terms(model, layout, plan).items():
        sent[within if span[term] <= per_node else between] += value
    return sent


def time_bound(
    model: pl.Model,
    layout: pl.Layout,
    chip: str,
    per_node: int | None = None,
    plan: pl.Plan = pl.TEXTBOOK,
) -> steptime.Bound:
    """Lower bounds on one step's seconds on `chip` (a key of costmodel.LINKS): its FLOPs
    (device_flops) at the published bfloat16 peak (the model's products run in bfloat16),
    each network's bytes (`networks`) at its published rate; the Bound's no-overlap sum,
    perfect-overlap max and MFU bound (of the FLOPs the step runs, recomputation
    included: `mfu_bound` gives the one of the model's FLOPs)."""
    flops = step_device_flops(model, layout)
    return steptime.bound(
        flops, networks(model, layout, chip, per_node, plan), chip, "bfloat16"
    )


def mfu_bound(
    model: pl.Model, layout: pl.Layout, chip: str, per_node: int | None = None
) -> float:
    """The best model-FLOPs utilisation the step could reach: model_flops per device at
    the peak over the perfect-overlap bound."""
    bound = time_bound(model, layout, chip, per_node)
    useful = model_flops(model) / layout.devices / steptime.peak(chip, "bfloat16")
    return useful / bound.perfect_overlap


def compute_bound_batch(
    model: pl.Model,
    layout: pl.Layout,
    chip: str,
    per_node: int | None = None,
    plan: pl.Plan = pl.TEXTBOOK,
) -> float:
    """The sequences per device above which the layout is compute-bound on `chip`: its
    FLOPs take longer at the peak than its bytes take over every network.

    Both sides are straight lines in the sequences b per device: compute(b) = alpha b + c0
    (c0: the optimizer), and per network bytes(b)/rate = beta b + gamma (gamma: gathers,
    gradients and the loss; beta: tensor parallelism's activation sums). Each network is
    matched at b = (gamma - c0) / (alpha - beta); the threshold is the largest (0 when the
    compute leads from the first sequence; infinity when a network's bytes grow as fast as
    the compute, as tensor parallelism's can). Scaling-Book style: compare it with the
    batch a device holds."""
    networks(model, layout, chip, per_node, plan)  # says what to change, if anything
    rows = layout.data * layout.fsdp
    # a pipeline keeps its microbatches: its lines are drawn through whole microbatches
    # per device (the figures are straight lines in the batch all the same)
    pipeline = layout.stages > 1
    micro = model.microbatches if pipeline else 1

    def line(b):
        m = dataclasses.replace(
            model, batch=b * rows, microbatches=model.microbatches if pipeline else 1
        )
        compute = steptime.compute_seconds(
            step_device_flops(m, layout), chip, "bfloat16"
        )
        sent = steptime.network_seconds(
            _networks(m, layout, chip, per_node, plan), chip
        )
        return compute, sent

    (c1, n1), (c2, n2) = line(micro), line(2 * micro)
    alpha = (c2 - c1) / micro
    c0 = c1 - alpha * micro
    threshold = 0.0
    for net in n1:
        beta = (n2[net] - n1[net]) / micro
        gamma = n1[net] - beta * micro
        if beta < alpha:
            threshold = max(threshold, (gamma - c0) / (alpha - beta))
        elif beta > alpha or gamma > c0:
            return (
                math.inf
            )  # this network's time grows as fast as the compute, or faster
    return threshold


# ------------------------------------------------------------------ the real H100's step


def gpu_card_step() -> dict:
    """The page config's step timed on one real H100 (results/gpu_card.json probe.step)."""
    path = HERE / "compiled" / "results" / "gpu_card.json"
    return json.loads(path.read_text())["probe"]["step"]


def card_step_bound(record: dict | None = None) -> tuple[float, float, float]:
    """(the formula's lower bound in seconds, the measured median, the formula's FLOPs) for
    the real H100's step: one device, so no network; compute at the H100's bf16 peak."""
    record = record or gpu_card_step()
    g = grid()
    model = dataclasses.replace(pl.model_of(g, record["config"]), batch=record["batch"])
    layout = pl.Layout("one device")
    bound = time_bound(model, layout, "h100")
    return (
        bound.no_overlap,
        record["seconds"],
        sum(device_flops(model, layout).values()),
    )


PAGE_STEPS = ("transformer step, remat", "transformer step, no remat")


def advanced_rows() -> list[dict]:
    """The compiled rows of the page's step ("transformer step, remat" and "no remat") of
    results/cpu.json and tpu.json, with the FLOPs their backend counts."""
    rows = []
    for family in ("cpu", "tpu"):
        path = HERE / "compiled" / "results" / f"{family}.json"
        for p in json.loads(path.read_text())["advanced"]["programs"]:
            if p["strategy"] in PAGE_STEPS and p["cost"]["flops"]:
                rows.append(p)
    return rows


def advanced_model(row: dict) -> tuple[pl.Model, pl.Layout]:
    """The planner's Model and Layout of an advanced row (the page's TPU size)."""
    from docs_build.compiled import advanced

    cfg = dataclasses.replace(
        advanced.TRANSFORMER, remat=row["strategy"].endswith(", remat")
    )
    mesh = row["mesh"]
    layout = pl.Layout(
        "page", data=mesh["data"], fsdp=mesh["fsdp"], tensor=mesh["tensor"]
    )
    return pl.Model.from_config(cfg, batch=advanced.TRANSFORMER_BATCH), layout


def main() -> None:
    g = grid()
    mib = 2**20
    print(
        f"{'target':<10}{'config':<18}{'mesh':<11}{'formula':>9}{'compiled':>10}  gap"
    )
    for e in g["entries"]:
        backend = backend_of(e["target"])
        formula, compiled = against_compiled(g, e)
        note = "" if checked(backend) else "  (unchecked)"
        if (backend, e["config"]) in EXCLUDED:
            note = "  (excluded)"
        print(
            f"{e['target']:<10}{e['config']:<18}{e['mesh']!s:<11}"
            f"{formula / mib:>9.1f}{compiled / mib:>10.1f}  "
            f"{formula / compiled - 1:+.1%}  {peak_phase(g, e)}{note}"
        )
    for backend in CHECKED:
        gap, e = largest_disagreement(g, backend)
        print(
            f"largest disagreement, {backend}: {gap:.1%} ({e['target']} / {e['config']} "
            f"/ {tuple(e['mesh'])}), tolerance {TOLERANCE[backend]:.0%}"
        )
    for row in advanced_rows():
        model, layout = advanced_model(row)
        counted = counted_flops(model, layout)
        print(
            f"{row['target']:<10}{row['strategy']:<28} counted {counted:.4g} "
            f"cost_analysis {row['cost']['flops']:.4g} "
            f"({counted / row['cost']['flops'] - 1:+.2%})"
        )
    bound, measured, flops = card_step_bound()
    record = gpu_card_step()
    print(
        f"H100, page config, one device: {flops:.4g} FLOPs by formula "
        f"(cost_analysis there: {record['flops']:.4g}); lower bound {bound * 1e3:.4g} ms, "
        f"measured median {measured * 1e3:.4g} ms ({bound / measured:.1%} of it)"
    )


if __name__ == "__main__":
    main()
