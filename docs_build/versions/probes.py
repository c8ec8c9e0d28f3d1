"""Probes: one small program for each API, old spelling and error the site teaches.

`python probes.py OUT.json` runs every probe in this interpreter, whatever JAX and Flax it
has (0.4.38 onwards), and writes what each did: it worked (with a value where the probe
reports one), it worked but warned with a DeprecationWarning, or it raised (the exception's
type and first line). The file is standalone on purpose: it runs inside environments that
hold an old JAX and nothing of this project, so it imports only the standard library at the
top and JAX, NumPy, Flax and Optax inside the probes.

`docs_build.versions.matrix` runs it under every JAX release line; the site reads the result
(docs_build/versions/results.json). Import this module without running it to get `PROBES`,
the probes' names and what they are about.
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Probe:
    id: str
    group: (
        str  # "api": what the site teaches; "old": an old spelling; "error": an error
    )
    # What it is about, one or more items of Markdown: the compatibility page shows them
    # joined by commas, the note on a page whose code needs the API names the first. Kept
    # apart because an item's code may hold a comma itself (`jax.make_mesh(..., axis_types=...)`).
    items: tuple[str, ...]
    run: Callable[[], object]
    # For "api" probes: a regular expression for code that needs this API. A page whose
    # code matches it gets a note naming the first release line where the probe works.
    uses: str | None = None
    package: str = "jax"  # whose release changes what the probe does

    def __post_init__(self):
        if isinstance(self.items, str):  # one item
            object.__setattr__(self, "items", (self.items,))

    @property
    def title(self) -> str:
        """Markdown, as the compatibility page shows it."""
        return ", ".join(self.items)


PROBES: list[Probe] = []


def probe(
    id: str,
    group: str,
    items: str | tuple[str, ...],
    uses: str | None = None,
    package="jax",
):
    def register(run):
        PROBES.append(Probe(id, group, items, run, uses, package))
        return run

    return register


# Helpers. Each builds what a probe needs with whatever this JAX offers; what they do is not
# the subject of any probe, so their own warnings are not recorded.


def _quiet(build):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build()


def _line():
    """A mesh of the 8 devices on one axis `x`, with Auto axes (every release has this)."""
    import jax
    import numpy as np

    return jax.sharding.Mesh(np.array(jax.devices()), ("x",))


def _explicit(shape=(8,), names=("x",)):
    import jax

    explicit = (jax.sharding.AxisType.Explicit,) * len(shape)
    return jax.make_mesh(shape, names, axis_types=explicit)


def _mesh_context():
    """The 8-device mesh set as the context: `jax.set_mesh` where it exists, else `with mesh`."""
    import jax

    mesh = _quiet(_line)
    return jax.set_mesh(mesh) if hasattr(jax, "set_mesh") else mesh


def _page_line():
    """The errors page's mesh: 8 devices on an Explicit axis `x`."""
    return _quiet(_explicit)


def _split(mesh, n=8.0):
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding, PartitionSpec

    return jax.device_put(jnp.arange(n), NamedSharding(mesh, PartitionSpec("x")))


def _shard_map():
    """`jax.shard_map` where it exists, else the experimental one (older releases)."""
    import jax

    if hasattr(jax, "shard_map"):
        return jax.shard_map

    def old(f, *, mesh, in_specs, out_specs, **kw):
        from jax.experimental.shard_map import shard_map

        return shard_map(f, mesh, in_specs=in_specs, out_specs=out_specs, **kw)

    return old


def _model(**kwargs):
    from flax import nnx

    return nnx.Linear(4, 2, rngs=nnx.Rngs(0), **kwargs)


def _optimizer(model):
    import optax
    from flax import nnx

    try:
        return nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
    except TypeError:  # releases before wrt=
        return nnx.Optimizer(model, optax.sgd(0.1))


def _grads(model):
    import jax.numpy as jnp
    from flax import nnx

    return nnx.grad(lambda m: jnp.sum(m(jnp.ones((1, 4)))))(model)


def _axis_types(mesh) -> str:
    types = getattr(mesh, "axis_types", None)
    if types is None:
        return "no axis types"
    if isinstance(types, dict):  # older releases mapped each type to its axes
        of = {axis: kind for kind, axes in types.items() for axis in axes}
        types = [of[axis] for axis in mesh.axis_names]
    return ", ".join(getattr(t, "name", str(t)) for t in types)


# Old spellings first: JAX warns about a deprecated module only when it is first imported,
# and the helpers above may import the same modules later.


@probe("experimental-shard-map", "old", "`jax.experimental.shard_map.shard_map`")
def _():
    from jax.experimental.shard_map import shard_map
    from jax.sharding import PartitionSpec as P

    f = shard_map(lambda b: 2 * b, _line(), in_specs=P("x"), out_specs=P("x"))
    f(_split(_line()))


@probe("pjit", "old", "`jax.experimental.pjit.pjit`")
def _():
    from jax.experimental.pjit import pjit

    pjit(lambda v: 2 * v)(_quiet(lambda: _split(_line())))


@probe("experimental-shard-reshard", "old", "`jax.experimental.shard.reshard`")
def _():
    from jax.experimental.shard import reshard  # noqa: F401


@probe("check-rep", "old", "`jax.shard_map(f, mesh, ..., check_rep=False)`")
def _():
    import jax
    from jax.sharding import PartitionSpec as P

    line = _line()
    f = jax.shard_map(
        lambda b: 2 * b, line, in_specs=P("x"), out_specs=P("x"), check_rep=False
    )
    f(_split(line))


@probe("pvary", "old", "`jax.lax.pvary(x, names)`")
def _():
    import jax
    from jax.sharding import PartitionSpec as P

    def body(b):  # a value that starts the same everywhere, made varying
        return b + jax.lax.pvary(jax.numpy.zeros(b.shape), ("x",))

    line = _line()
    _shard_map()(body, mesh=line, in_specs=P("x"), out_specs=P("x"))(
        _quiet(lambda: _split(line))
    )


@probe("pmap", "old", "`jax.pmap`")
def _():
    import jax
    import jax.numpy as jnp

    jax.pmap(lambda v: 2 * v)(jnp.arange(8.0))


@probe(
    "device-mesh",
    "old",
    "`mesh_utils.create_device_mesh` + `Mesh`: axis types",
)
def _():
    from jax.experimental import mesh_utils
    from jax.sharding import Mesh

    return _axis_types(Mesh(mesh_utils.create_device_mesh((8,)), ("x",)))


@probe("axis-types", "old", "`jax.make_mesh` without `axis_types=`: axis types")
def _():
    import jax

    return _axis_types(jax.make_mesh((8,), ("x",)))


@probe("mesh-context", "old", "`with mesh:`")
def _():
    import jax

    line = _line()
    with line:
        jax.jit(lambda v: 2 * v)(_quiet(lambda: _split(line)))


@probe("use-mesh", "old", "`jax.sharding.use_mesh(mesh)`")
def _():
    import jax

    with jax.sharding.use_mesh(_line()):
        pass


@probe("device-put-replicated", "old", "`jax.device_put_replicated`")
def _():
    import jax
    import jax.numpy as jnp

    jax.device_put_replicated(jnp.ones(2), jax.devices())


@probe("device-put-sharded", "old", "`jax.device_put_sharded`")
def _():
    import jax
    import jax.numpy as jnp

    jax.device_put_sharded([jnp.ones(2)] * 8, jax.devices())


@probe("positional-sharding", "old", "`jax.sharding.PositionalSharding`")
def _():
    import jax

    jax.sharding.PositionalSharding(jax.devices())


@probe("pmap-sharding", "old", "`jax.sharding.PmapSharding`")
def _():
    import jax

    jax.sharding.PmapSharding  # noqa: B018


@probe("specs-and-tuples", "old", '`P("x", None) == ("x", None)`')
def _():
    from jax.sharding import PartitionSpec as P

    return str(P("x", None) == ("x", None))


@probe("jit-device", "old", "`jax.jit(f, device=d)`")
def _():
    import jax
    import jax.numpy as jnp

    jax.jit(lambda v: 2 * v, device=jax.devices()[0])(jnp.ones(2))


@probe(
    "optimizer-wrt", "old", "`nnx.Optimizer(model, tx)` without `wrt=`", package="flax"
)
def _():
    import optax
    from flax import nnx

    nnx.Optimizer(_quiet(_model), optax.sgd(0.1))


@probe("optimizer-update", "old", "`optimizer.update(grads)`", package="flax")
def _():
    model = _quiet(_model)
    optimizer, grads = _quiet(lambda: (_optimizer(model), _grads(model)))
    optimizer.update(grads)


@probe(
    "nnx-mesh-context",
    "old",
    "annotated NNX model built under `with mesh:`",
    package="flax",
)
def _():
    from flax import nnx

    init = nnx.with_partitioning(nnx.initializers.lecun_normal(), (None, "x"))
    with _line():
        nnx.Linear(4, 8, kernel_init=init, rngs=nnx.Rngs(0))


@probe("param-sharding", "old", "`nnx.Param(..., sharding=...)`", package="flax")
def _():
    import jax.numpy as jnp
    from flax import nnx

    with _mesh_context():
        nnx.Param(jnp.ones((4, 8)), sharding=(None, "x"))


@probe(
    "param-sharding-names",
    "old",
    "`nnx.Param(..., sharding_names=...)`",
    package="flax",
)
def _():
    import jax.numpy as jnp
    from flax import nnx

    with _mesh_context():
        nnx.Param(jnp.ones((4, 8)), sharding_names=(None, "x"))


@probe("variable-value", "old", "`variable.value`", package="flax")
def _():
    import jax.numpy as jnp
    from flax import nnx

    nnx.Param(jnp.ones(2)).value  # noqa: B018


@probe("variable-state", "old", "`nnx.VariableState`", package="flax")
def _():
    from flax import nnx

    nnx.VariableState  # noqa: B018


@probe("tree-map", "old", "`jax.tree_map`")
def _():
    import jax

    jax.tree_map(lambda a: a, {"a": 1})


@probe("get-aval", "old", "`jax.core.get_aval`")
def _():
    import jax

    jax.core.get_aval(_quiet(lambda: _split(_line())))


# What the site teaches.


@probe("jax-p", "api", "`jax.P`", uses=r"\bjax\.P\b|from jax import (?:[\w, ]*\b)?P\b")
def _():
    import jax

    jax.P  # noqa: B018


@probe(
    "make-mesh-axis-types",
    "api",
    ("`jax.make_mesh(..., axis_types=...)`", "`AxisType`"),
    uses=r"\bAxisType\b|axis_types=",
)
def _():
    return _axis_types(_explicit())


@probe("jax-shard-map", "api", "`jax.shard_map`", uses=r"\bjax\.shard_map\(")
def _():
    import jax
    from jax.sharding import PartitionSpec as P

    line = _line()
    jax.shard_map(lambda b: 2 * b, mesh=line, in_specs=P("x"), out_specs=P("x"))(
        _quiet(lambda: _split(line))
    )


@probe("check-vma", "api", "`jax.shard_map(..., check_vma=)`", uses=r"\bcheck_vma=")
def _():
    import jax
    from jax.sharding import PartitionSpec as P

    line = _line()
    f = jax.shard_map(
        lambda b: 2 * b, mesh=line, in_specs=P("x"), out_specs=P("x"), check_vma=False
    )
    f(_quiet(lambda: _split(line)))


@probe("set-mesh", "api", "`jax.set_mesh`", uses=r"\bjax\.set_mesh\(")
def _():
    import jax

    line = _line()
    with jax.set_mesh(line):
        jax.jit(lambda v: 2 * v)(_quiet(lambda: _split(line)))


@probe("reshard", "api", "`jax.reshard`", uses=r"\bjax\.reshard\(")
def _():
    import jax
    from jax.sharding import PartitionSpec as P

    mesh = _quiet(_explicit)
    with jax.set_mesh(mesh):
        jax.reshard(_split(mesh), P())


@probe("typeof", "api", "`jax.typeof`", uses=r"\bjax\.typeof\(")
def _():
    import jax

    return str(jax.typeof(_quiet(lambda: _split(_quiet(_explicit)))))


@probe("smap", "api", "`jax.smap`", uses=r"\bjax\.smap\(")
def _():
    import jax

    mesh = _quiet(_explicit)
    with jax.set_mesh(mesh):
        jax.jit(jax.smap(lambda b: 2 * b, in_axes=0, out_axes=0, axis_name="x"))(
            _split(mesh)
        )


@probe("pcast", "api", '`jax.lax.pcast(x, names, to="varying")`', uses=r"\bpcast\(")
def _():
    import jax
    from jax.sharding import PartitionSpec as P

    def body(b):  # a value that starts the same everywhere, cast to varying
        return b + jax.lax.pcast(jax.numpy.zeros(b.shape), ("x",), to="varying")

    line = _line()
    _shard_map()(body, mesh=line, in_specs=P("x"), out_specs=P("x"))(
        _quiet(lambda: _split(line))
    )


@probe(
    "all-gather-to",
    "api",
    '`jax.lax.all_gather(..., to="invarying")`',
    uses=r"to=\"invarying\"",
)
def _():
    import jax
    from jax.sharding import PartitionSpec as P

    line = _line()
    body = lambda b: jax.lax.all_gather(b, "x", tiled=True, to="invarying")  # noqa: E731
    _shard_map()(body, mesh=line, in_specs=P("x"), out_specs=P())(
        _quiet(lambda: _split(line))
    )


@probe(
    "optimizer-wrt-update",
    "api",
    ("`nnx.Optimizer(model, tx, wrt=nnx.Param)`", "`optimizer.update(model, grads)`"),
    uses=r"\bwrt=nnx\.Param\b",
    package="flax",
)
def _():
    import optax
    from flax import nnx

    model = _quiet(_model)
    optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
    optimizer.update(model, _quiet(lambda: _grads(model)))


@probe(
    "nnx-sharding-metadata",
    "api",
    "NNX sharding metadata: the name `nnx.with_partitioning` stores the spec under",
    package="flax",
)
def _():
    from flax import nnx

    init = nnx.with_partitioning(nnx.initializers.lecun_normal(), (None, "x"))
    with _mesh_context():
        layer = nnx.Linear(4, 8, kernel_init=init, rngs=nnx.Rngs(0))
    metadata = layer.kernel.get_metadata()
    names = sorted(k for k, v in metadata.items() if v == (None, "x"))
    return ", ".join(names) or "none"


@probe(
    "get-partition-spec",
    "api",
    "`nnx.get_partition_spec`",
    uses=r"\bnnx\.get_partition_spec\(",
    package="flax",
)
def _():
    from flax import nnx

    nnx.get_partition_spec(nnx.state(_quiet(_model)))


@probe(
    "variable-index",
    "api",
    "`variable[...]`",
    uses=r"\.(?:kernel|bias|value|embedding)\[\.\.\.\]",
    package="flax",
)
def _():
    import jax.numpy as jnp
    from flax import nnx

    nnx.Param(jnp.ones(2))[...]


@probe("tree-dot-map", "api", "`jax.tree.map`", uses=r"\bjax\.tree\.map\(")
def _():
    import jax

    jax.tree.map(lambda a: a, {"a": 1})


# The errors page: each probe runs the failing code of one section. "raises" is the page's
# error; "works" means this release does not raise it.


@probe("error-mesh-too-large", "error", "mesh larger than the devices")
def _():
    import jax

    jax.make_mesh((4, 4), ("x", "y"))


@probe("error-indivisible", "error", "dimension not divisible (`device_put`)")
def _():
    _split(_page_line(), 6.0)


@probe("error-indivisible-shard-map", "error", "dimension not divisible (`shard_map`)")
def _():
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec as P

    f = _shard_map()(
        lambda r: 2 * r, mesh=_page_line(), in_specs=P("x"), out_specs=P("x")
    )
    f(jnp.arange(6.0))


@probe("error-spec-too-long", "error", "spec longer than the array (`device_put`)")
def _():
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = _quiet(lambda: _explicit((2, 4), ("x", "y")))
    jax.device_put(jnp.arange(8.0), NamedSharding(mesh, P("x", "y")))


@probe(
    "error-spec-too-long-shard-map", "error", "spec longer than the array (`shard_map`)"
)
def _():
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec as P

    f = _shard_map()(
        lambda v: v, mesh=_page_line(), in_specs=P("x", None), out_specs=P("x")
    )
    f(jnp.arange(8.0))


@probe("error-no-mesh", "error", "`PartitionSpec` without a mesh")
def _():
    import jax
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec as P

    jax.device_put(jnp.arange(8.0), P("x"))


@probe("error-contraction", "error", "ambiguous contraction on `Explicit` axes")
def _():
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = _quiet(lambda: _explicit((2, 4), ("x", "y")))
    a = jax.device_put(jnp.ones((4, 8)), NamedSharding(mesh, P(None, "y")))
    b = jax.device_put(jnp.ones((8, 2)), NamedSharding(mesh, P("y", None)))
    a @ b


@probe("error-incompatible", "error", "operands split differently on `Explicit` axes")
def _():
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = _quiet(lambda: _explicit((2, 4), ("x", "y")))
    over_x = jax.device_put(jnp.arange(8.0), NamedSharding(mesh, P("x")))
    over_y = jax.device_put(jnp.arange(8.0), NamedSharding(mesh, P("y")))
    over_x + over_y


@probe("error-in-specs-mismatch", "error", "`in_specs` that disagree with the input")
def _():
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec as P

    mesh = _quiet(_explicit)
    f = _shard_map()(lambda v: 2 * v, mesh=mesh, in_specs=P("x"), out_specs=P("x"))
    f(jnp.arange(8.0))


@probe("error-out-specs-too-long", "error", "`out_specs` too long for the result")
def _():
    from jax.sharding import PartitionSpec as P

    line = _page_line()
    f = _shard_map()(lambda v: v.sum(), mesh=line, in_specs=P("x"), out_specs=P("x"))
    f(_quiet(lambda: _split(line)))


@probe("error-out-specs-replicated", "error", "`out_specs` that claim replication")
def _():
    from jax.sharding import PartitionSpec as P

    line = _page_line()
    f = _shard_map()(lambda v: 2 * v, mesh=line, in_specs=P("x"), out_specs=P())
    f(_quiet(lambda: _split(line)))


@probe("error-unbound-axis", "error", "axis name outside `shard_map`")
def _():
    import jax

    jax.jit(lambda v: jax.lax.psum(v, "x"))(_quiet(lambda: _split(_page_line())))


@probe("error-scan-carry", "error", "loop carry that starts invariant")
def _():
    import jax
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec as P

    def add_three_times(v):
        start = jnp.zeros(v.shape)
        return jax.lax.fori_loop(0, 3, lambda i, total: total + v, start)

    line = _page_line()
    f = _shard_map()(add_three_times, mesh=line, in_specs=P("x"), out_specs=P("x"))
    f(_quiet(lambda: _split(line)))


@probe("error-nnx-mesh", "error", "NNX parameters annotated, no mesh", package="flax")
def _():
    from flax import nnx

    init = nnx.with_partitioning(nnx.initializers.lecun_normal(), (None, "x"))
    nnx.Linear(4, 8, kernel_init=init, rngs=nnx.Rngs(0))


# Last: it may change the device count where a release allows that.
@probe("error-device-count", "error", "device count changed after JAX started")
def _():
    import jax

    jax.device_count()
    jax.config.update("jax_num_cpu_devices", 4)


DEPRECATIONS = (DeprecationWarning, PendingDeprecationWarning, FutureWarning)


def first_line(text: str, limit: int = 300) -> str:
    line = text.strip().split("\n", 1)[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def run(p: Probe) -> dict:
    """What one probe did: works, warns or raises, never invented."""
    result, value = {}, None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = p.run()
        except BaseException as err:  # recorded, whatever it is
            if isinstance(err, KeyboardInterrupt):
                raise
            result = {
                "outcome": "raises",
                "exception": type(err).__name__,
                "message": first_line(str(err)),
            }
    warned = [w for w in caught if issubclass(w.category, DEPRECATIONS)]
    if result:  # raised; a deprecation warned on the way is worth knowing
        if warned:
            result["warning"] = warned[0].category.__name__
            result["warning_message"] = first_line(str(warned[0].message))
        return result
    result = {"outcome": "warns" if warned else "works"}
    if warned:
        result["warning"] = warned[0].category.__name__
        result["message"] = first_line(str(warned[0].message))
    if value is not None:
        result["value"] = str(value)
    return result


def main(out: str) -> None:
    import importlib.metadata

    installed = {}
    for name in ("jax", "jaxlib", "flax", "optax", "numpy"):
        try:
            installed[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            installed[name] = None
    import jax

    if jax.device_count() != 8:
        raise SystemExit(f"expected 8 CPU devices, got {jax.device_count()}")
    results = {p.id: run(p) for p in PROBES}
    python = ".".join(map(str, sys.version_info[:3]))
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"python": python, "packages": installed, "results": results}, f)


if __name__ == "__main__":
    main(sys.argv[1])
