"""The strategy planner's recommendation as a program: the JAX that lays out one row.

`program(model, layout)` is the text the planner page prints for a (data, fsdp, tensor)
layout: the transformer page's `Config` for the planner's model, the `jax.make_mesh` call
with its axis types, what the page's logical-axis RULES give each parameter on that mesh
(its spec and its block per device; AdamW's two moments of it get the same), the batch's
sharding, and the page's step (`sharded_init`, `make_train_step`) compiled and run once.
It uses the names a reader has after pasting the transformer page's blocks in order
(`namespace()` gives the same names from the snippets).

docs/javascripts/strategy-planner.js builds the same text (tests/docs_build/
test_planner_page.py runs both in Node and compares them); docs_build/planner_grid.py
compiles this text (`run=False`: everything up to the compile) for every entry of the
planner grid, so the grid's programs are the printed ones.

A layout that cannot split the model gets no program (planner.reasons says why); a
pipeline gets none either: the transformer step has no pipeline stages.
"""

from __future__ import annotations

import math

from docs_build import planner as pl

AXES = ("data", "fsdp", "tensor")
# Each parameter of the transformer page's TrainState (as its print_state names it) and
# the logical names of its dimensions (the model's `param(..., names)`; a test holds this
# to the model's metadata). "gate" only with a gated MLP, "head" only when untied.
PARAMETERS = (
    ("model/embed", ("vocab", "embed")),
    ("model/layers/attn_norm", ("layers", "embed")),
    ("model/layers/q", ("layers", "embed", "heads", "head_dim")),
    ("model/layers/kv", ("layers", None, "embed", "kv_heads", "head_dim")),
    ("model/layers/out", ("layers", "heads", "head_dim", "embed")),
    ("model/layers/mlp_norm", ("layers", "embed")),
    ("model/layers/gate", ("layers", "embed", "mlp")),
    ("model/layers/up", ("layers", "embed", "mlp")),
    ("model/layers/down", ("layers", "mlp", "embed")),
    ("model/final_norm", ("embed",)),
    ("model/head", ("embed", "vocab")),
)
# The Config fields the program names, in Config's order, and the defaults it leaves out.
CONFIG_FIELDS = ("vocab", "d_model", "heads", "mlp", "layers", "seq")
PIPELINE = (
    "no program: the printed program covers data, FSDP and tensor meshes, and the "
    "transformer step has no pipeline stages; the pipeline page builds one"
)
NOT_SPLIT = "no program: this layout cannot split the model: {reason}"


def rules() -> tuple:
    """The transformer page's logical-axis rules (model.RULES)."""
    from snippets.advanced.transformer.model import RULES

    return RULES


def _repr(value) -> str:
    """Python's repr of a mesh-axis entry: None, a name, or a tuple of names."""
    if value is None:
        return "None"
    if isinstance(value, str):
        return f"'{value}'"
    return "(" + ", ".join(map(_repr, value)) + ("," if len(value) == 1 else "") + ")"


def _shape(dims) -> str:
    return "(" + ", ".join(map(str, dims)) + ("," if len(dims) == 1 else "") + ")"


def _spec(entries) -> str:
    """A PartitionSpec as JAX prints it: `P('fsdp',)`, `P(None, 'fsdp')`."""
    return (
        "P(" + ", ".join(map(_repr, entries)) + ("," if len(entries) == 1 else "") + ")"
    )


def _ways(axes, sizes: dict[str, int]) -> int:
    if axes is None:
        return 1
    return math.prod(sizes[a] for a in ((axes,) if isinstance(axes, str) else axes))


def dimensions(model: pl.Model) -> dict[str, int]:
    """Each logical name's size in `model` (the kv array's leading 2 has no name)."""
    return {
        "vocab": model.vocab,
        "embed": model.d_model,
        "heads": model.heads,
        "kv_heads": model.kv,
        "head_dim": model.head_dim,
        "mlp": model.mlp,
        "layers": model.layers,
        None: 2,
    }


def parameters(model: pl.Model, layout: pl.Layout) -> list[tuple]:
    """Each parameter of the model: (name, shape, spec entries, block on one device), as
    the page's RULES lay it out on the layout's mesh."""
    table = dict(rules())
    sizes = dict(zip(AXES, layout.mesh, strict=True))
    size = dimensions(model)
    found = []
    for name, names in PARAMETERS:
        if name.endswith("/gate") and not model.gated:
            continue
        if name.endswith("/head") and model.tied:
            continue
        shape = tuple(size[n] for n in names)
        entries = tuple(None if n is None else table[n] for n in names)
        block = tuple(n // _ways(e, sizes) for n, e in zip(shape, entries, strict=True))
        found.append((name, shape, entries, block))
    return found


def _config(model: pl.Model) -> str:
    fields = [f"{k}={getattr(model, k)}" for k in CONFIG_FIELDS]
    if model.remat is not True:
        fields.append(f"remat={model.remat!r}")
    if model.kv != model.heads:
        fields.append(f"kv_heads={model.kv}")
    if model.gated:
        fields.append("gated=True")
    if model.tied:
        fields.append("tied=True")
    return f"cfg = Config({', '.join(fields)})"


def why_not(model: pl.Model, layout: pl.Layout) -> str | None:
    """Why the planner prints no program for this row, or None."""
    if layout.stages > 1:
        return PIPELINE
    found = pl.reasons(model, layout)
    return NOT_SPLIT.format(reason="; ".join(found)) if found else None


def program(model: pl.Model, layout: pl.Layout, run: bool = True) -> str:
    """The program for `layout`: the mesh, the rules on it, the state's and the batch's
    shardings, the step compiled; with `run`, one step on the devices and its loss."""
    why = why_not(model, layout)
    if why:
        raise pl.CostModelError(why)
    a, f, _ = layout.mesh
    sizes = dict(zip(AXES, layout.mesh, strict=True))
    n, batch = layout.devices, model.batch
    lines = [
        f"# {layout.name} on {n} devices: (data, fsdp, tensor) = {_shape(layout.mesh)}.",
        "# Run after the transformer page's blocks: Config, RULES, mesh_axes,",
        "# sharded_init, make_train_step, shard_batch and token_batches are theirs.",
        _config(model),
        "mesh = jax.make_mesh(",
        f"    {_shape(layout.mesh)},",
        '    ("data", "fsdp", "tensor"),',
        "    axis_types=(AxisType.Auto,) * 3,",
        f"    devices=jax.devices()[:{n}],",
        ")",
        "# RULES on this mesh: each logical axis, its mesh axes, how many ways it splits",
    ]
    for logical, axes in rules():
        ways = _ways(axes, sizes)
        said = f"{ways} ways" if ways > 1 else "whole"
        lines.append(f"#   {logical:<9} -> {_repr(axes):<18} {said}")
    rows = [
        (name, _shape(shape), _spec(entries), _shape(block))
        for name, shape, entries, block in parameters(model, layout)
    ]
    head = ("parameter", "shape", "spec", "per device")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(3)]
    lines.append(
        "# Each parameter, and AdamW's two moments of it (mu, nu), is laid out:"
    )
    for r in [head, *rows]:
        cells = [c.ljust(w) for c, w in zip(r, widths, strict=False)]
        lines.append("#   " + "  ".join([*cells, r[3]]))
    if model.optimizer != "adamw" or model.param_bytes != pl.F32:
        weights = "float32" if model.param_bytes == pl.F32 else "bfloat16"
        lines += [
            "# The page's TrainState trains with AdamW on float32 weights; the planner's",
            f"# row priced {model.optimizer} on {weights} weights.",
        ]
    batch_spec = _spec((table_of("batch"), None))
    lines += [
        "sharded = sharded_init(cfg, mesh)  # the train state, split by RULES",
        f"# The batch: {batch} sequences, {batch // (a * f)} on each device.",
        f'batch = NamedSharding(mesh, mesh_axes(("batch", None)))  # {batch_spec}',
        f"tokens = jax.ShapeDtypeStruct(({batch}, cfg.seq + 1), jnp.int32, "
        "sharding=batch)",
        "train_step = make_train_step(sharded, mesh)",
        "compiled = train_step.lower(sharded.abstract, tokens).compile()",
    ]
    if run:
        lines += [
            "# One step on the devices:",
            "state = sharded.init()",
            f"batches = token_batches(cfg, steps=1, batch={batch})",
            "state, loss = compiled(state, shard_batch(batches[0], mesh))",
            'print(f"loss {float(loss):.3f}")',
        ]
    return "\n".join(lines) + "\n"


def text_or_why(model: pl.Model, layout: pl.Layout) -> dict[str, str]:
    """What the page shows for a row: {"text": its program} or {"why": why none}."""
    why = why_not(model, layout)
    return {"why": why} if why else {"text": program(model, layout)}


def data() -> dict:
    """What the script builds the same text from (planner_page.data_json)."""
    return {
        "rules": rules(),
        "parameters": PARAMETERS,
        "config_fields": CONFIG_FIELDS,
        "pipeline": PIPELINE,
        "not_split": NOT_SPLIT,
    }


def table_of(logical: str):
    return dict(rules())[logical]


def namespace(devices=None) -> dict:
    """The names the transformer page's blocks define, pasted in order (from its
    snippets); with `devices`, a `jax` whose devices() are those (a compile-only TPU or
    GPU target's), everything else JAX's own."""
    import types

    import jax

    from snippets.advanced.transformer import init, model, step

    names = {}
    for module in (model, init, step):
        names |= {k: v for k, v in vars(module).items() if not k.startswith("__")}
    if devices is not None:
        on = types.ModuleType("jax")
        on.__getattr__ = lambda name: getattr(jax, name)
        on.devices = lambda *_: list(devices)
        names["jax"] = on
    return names
