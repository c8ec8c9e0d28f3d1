"""What the grader compares, and how it says what is wrong, in the learner's terms.

Each function returns a list of problems (sentences); an empty list means "fine". The
graders of the exercises (`snippets/exercises/<name>/grader.py`) build their checks from these.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np
from jax.extend.core import Literal  # a constant in a jaxpr, which no shard_map made
from jax.sharding import Mesh, NamedSharding

Problems = list[str]


@dataclass(frozen=True)
class Case:
    """One hidden case: the arguments to call with, and what the result must satisfy."""

    about: str  # shown to the learner: what the arguments are
    args: Callable[[], tuple]  # builds fresh arguments (a call may change them)
    check: Callable[[Any, tuple], Problems] | None = None
    raises: type[Exception] | None = None  # the call must raise this instead
    message_has: tuple[str, ...] = ()  # ... with these words in its message
    # What the grader watches while the function runs, for a check that must know how the
    # result was made, not only what it is: a context manager entered around the call,
    # which the check then reads (see sharded_linear's and checkpoint_restore's graders).
    watch: Callable[[], AbstractContextManager] | None = None


@dataclass(frozen=True)
class Exercise:
    """An exercise: the function the learner writes, and its hidden cases."""

    name: str  # the function's name, and the exercise's
    title: str
    params: tuple[str, ...]  # the parameters the grader passes, in order
    practises: str  # the page it belongs to, relative to docs/
    solution: str  # "file:section" of the reference solution, as pages include it
    cases: Callable[[], list[Case]]  # built after JAX has its 8 devices
    requires: tuple[str, ...] = ()  # operations the traced program must contain
    forbids: tuple[str, ...] = ()  # ... and must not contain
    traced: tuple[int, ...] = ()  # which arguments are arrays, for jax.make_jaxpr
    # The work must run on the devices: traced with abstract arrays, the function must not
    # need their values on the host (NumPy on the host, then placed, is not the lesson).
    on_device: bool = False
    hints: dict[str, str] = field(default_factory=dict)  # operation -> what to do
    # Words of an exception's message -> what the learner probably has to change.
    on_error: dict[str, str] = field(default_factory=dict)
    # How a shard_map must do the work (which input it splits, over which devices), for an
    # exercise that requires one. The function must then trace: no fallback to a plain run.
    sharded: ShardedWork | None = None
    # More rules of the statement, checked on the traced program of every case that passed:
    # (function, the case's arguments, its Program) -> problems; and how the report line
    # names them.
    rules: Callable[[Callable, tuple, Program], Problems] | None = None
    rules_words: tuple[str, ...] = ()

    @property
    def must_trace(self) -> bool:
        """Its program check needs the traced program: a plain run cannot show it."""
        return self.sharded is not None or self.rules is not None


@dataclass(frozen=True)
class Split:
    """What a shard_map must split: dimension `dim` of argument `argument`."""

    argument: int  # the argument's position in the function's parameters
    what: str  # in the learner's words: "the rows of x"
    dim: int = 0
    axis: str | None = None  # the mesh axis the statement names; None: any
    # The case's arguments -> (how many devices the statement asks for, why); None: any.
    devices: Callable[[tuple], tuple[int, str]] | None = None


@dataclass(frozen=True)
class ShardedWork:
    """What the statement says a shard_map does: its splits, its out_specs, its result."""

    splits: tuple[Split, ...]
    out_specs: jax.P | None = None  # the out_specs the statement gives; None: any
    # The function returns what the shard_map returns, only moved, reshaped or stacked:
    # no work of the exercise's is done after it.
    returned: bool = True


# The operations a program check can ask for: how a learner writes each one, and the
# primitives it becomes in a jaxpr (psum is `psum_invariant` when check_vma is on).
OPERATIONS = {
    "shard_map": ("jax.shard_map", {"shard_map"}),
    "psum": ("jax.lax.psum", {"psum", "psum_invariant", "psum2"}),
    "ppermute": ("jax.lax.ppermute", {"ppermute"}),
    "all_gather": ("jax.lax.all_gather", {"all_gather", "all_gather_invariant"}),
    "all_to_all": ("jax.lax.all_to_all", {"all_to_all"}),
    "psum_scatter": ("jax.lax.psum_scatter", {"reduce_scatter", "psum_scatter"}),
    "pmax": ("jax.lax.pmax", {"pmax"}),
    "pmin": ("jax.lax.pmin", {"pmin"}),
    "jit": ("jax.jit", {"jit", "pjit"}),
}


def number(value: Any) -> str:
    """A value as a learner would write it: 3, 2.5, -0.125, True."""
    value = np.asarray(value).item() if np.ndim(value) == 0 else value
    if isinstance(value, float):
        return f"{value:.4g}"  # digits every CPU agrees on
    return repr(value)


def where(index: tuple[int, ...]) -> str:
    return str(index[0]) if len(index) == 1 else str(tuple(int(i) for i in index))


def kind(value: Any) -> str:
    """What a value is, in a few words: 'a jax.Array of shape (8,)', 'None', 'a dict'."""
    if value is None:
        return "None"
    if isinstance(value, jax.Array):
        return f"a jax.Array of shape {value.shape}"
    if isinstance(value, np.ndarray):
        return f"a NumPy array of shape {value.shape}"
    name = type(value).__name__
    return f"{'an' if name[0] in 'aeiouAEIOU' else 'a'} {name}"


def array_problems(
    got: Any,
    expected: np.ndarray,
    *,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    exact: bool = False,
    dtype: Any = None,
) -> Problems:
    """Shape, dtype (when given) and values of `got` against `expected`, with the first
    mismatch."""
    if got is None:
        return ["it returned None: did you forget the `return`?"]
    try:
        values = np.asarray(got)
    except Exception:  # anything np.asarray cannot read is the wrong kind of result
        return [f"it returned {kind(got)}, not an array."]
    if values.dtype == object:
        return [f"it returned {kind(got)}, which is not an array of numbers."]
    expected = np.asarray(expected)
    if values.shape != expected.shape:
        return [f"wrong shape: expected {expected.shape}, got {values.shape}."]
    if dtype is not None and values.dtype != np.dtype(dtype):
        return [
            f"wrong dtype: expected {np.dtype(dtype)}, got {values.dtype}. Keep the "
            f"{np.dtype(dtype)} of the input: do not cast it, or the result, to another "
            "type."
        ]
    if exact:
        wrong = values != expected
    else:
        wrong = ~np.isclose(values, expected, rtol=rtol, atol=atol, equal_nan=False)
    if not wrong.any():
        return []
    first = tuple(np.argwhere(wrong)[0])
    return [
        f"wrong values: {int(wrong.sum())} of {expected.size} differ. The first is "
        f"at index {where(first)}: expected {number(expected[first])}, "
        f"got {number(values[first])}."
    ]


def spec_text(sharding: NamedSharding, ndim: int) -> str:
    """The spec of a sharding, with trailing Nones dropped, as `P(...)`."""
    entries = list(sharding.spec) + [None] * (ndim - len(sharding.spec))
    while entries and entries[-1] is None:
        entries.pop()
    return str(jax.P(*entries))


def sharding_problems(got: Any, mesh: Mesh, spec: jax.P) -> Problems:
    """Is `got` a jax.Array laid out on `mesh` as `spec` says?"""
    wanted = NamedSharding(mesh, spec)
    if not isinstance(got, jax.Array):
        return [
            f"the result should be a jax.Array laid out as {spec}, but it is "
            f"{kind(got)}, which no device holds."
        ]
    sharding = got.sharding
    if sharding.is_equivalent_to(wanted, got.ndim):
        return []
    devices = len(sharding.device_set)
    if devices == 1 and mesh.size > 1:
        shown = f"an array whole on one device ({next(iter(sharding.device_set))})"
    elif sharding.is_fully_replicated:
        shown = "P(), a whole copy on every device"
    elif isinstance(sharding, NamedSharding):
        shown = str(sharding.spec)
        if spec_text(sharding, got.ndim) == spec_text(wanted, got.ndim):
            return [
                f"wrong mesh: it is laid out as {spec_text(wanted, got.ndim)}, as asked, "
                f"but on another mesh, {mesh_text(sharding.mesh)}, not the one it was "
                f"given, {mesh_text(mesh)}. Use the mesh it was given; do not build "
                "your own."
            ]
    else:
        shown = f"a {type(sharding).__name__} over {devices} devices"
    return [f"wrong sharding: expected {spec}, got {shown}."]


def mesh_text(mesh) -> str:
    """A mesh's axes and devices: {'data': 2, 'model': 4} of devices [0, 1, ...]."""
    axes = "{" + ", ".join(f"'{n}': {s}" for n, s in mesh.shape.items()) + "}"
    ids = [int(d.id) for d in np.asarray(mesh.devices).flat]
    return f"{axes} of devices {ids}"


def shard_shape_problems(got: jax.Array, block: tuple[int, ...]) -> Problems:
    shapes = {s.data.shape for s in got.addressable_shards}
    if shapes != {block}:
        return [
            f"each device should hold a block of shape {block}; got {sorted(shapes)}."
        ]
    return []


# ----------------------------------------------------------------------------------------
# The program check: which operations a function's traced program contains.


def _subjaxprs(value: Any) -> Iterable:
    if hasattr(value, "eqns"):  # a Jaxpr
        yield value
    elif hasattr(value, "jaxpr") and hasattr(value.jaxpr, "eqns"):  # a ClosedJaxpr
        yield value.jaxpr
    elif isinstance(value, tuple | list):
        for item in value:
            yield from _subjaxprs(item)


@contextmanager
def _tracing(vmaps: list[frozenset] | None = None):
    """While the grader traces: what a correct answer may ask of a concrete array works on
    a traced one too, and every jax.vmap is recorded (in `vmaps`) with the named axes bound
    around it.

    A traced array has no `.sharding` and no `.block_until_ready()`, which a concrete one
    has, and a correct answer may use: the sharding of a result, to place another array
    beside it; a wait before timing. Inside the trace the sharding is the one its type
    carries, `jax.typeof(x).sharding`, and the wait does nothing. A vmap leaves nothing in
    a jaxpr but batched operations, so the grader notes when JAX starts one: the named axes
    bound then are a shard_map's mesh axes inside its body, none outside. These patch
    internals of JAX, only for the duration of the trace.
    """
    from jax._src import core
    from jax._src.interpreters import batching

    given = {
        "sharding": property(lambda self: jax.typeof(self).sharding),
        "block_until_ready": lambda self: self,
    }
    before = {name: core.Tracer.__dict__.get(name) for name in given}  # None: none
    start = batching.BatchTrace.__init__

    def recording_start(self, *args, **kwargs):
        if vmaps is not None:
            vmaps.append(frozenset(core.get_axis_env().axis_sizes))
        start(self, *args, **kwargs)

    for name, value in given.items():
        setattr(core.Tracer, name, value)
    batching.BatchTrace.__init__ = recording_start
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                delattr(core.Tracer, name)
            else:
                setattr(core.Tracer, name, value)
        batching.BatchTrace.__init__ = start


def traced_program(
    fn: Callable,
    args: tuple,
    traced: tuple[int, ...],
    vmaps: list[frozenset] | None = None,
):
    """The jaxpr of fn(*args), the arguments at positions `traced` abstract arrays."""

    def with_arrays(*arrays):
        full = list(args)
        for position, array in zip(traced, arrays, strict=True):
            full[position] = array
        return fn(*full)

    with _tracing(vmaps):
        return jax.make_jaxpr(with_arrays)(*(args[i] for i in traced)).jaxpr


@dataclass(frozen=True)
class Step:
    """One operation of a traced program, and where its data come from and go."""

    name: str  # the primitive: "shard_map", "dynamic_slice", ...
    params: dict
    operands: tuple[frozenset[int], ...]  # per operand: the arguments it is made from
    shapes: tuple[tuple[int, ...], ...]  # the operands' shapes
    out_shapes: tuple[tuple[int, ...], ...]
    reaches: bool  # what it computes reaches the function's result
    returned: bool  # the result is its output, only moved, reshaped or stacked
    manual: bool = False  # it runs in a shard_map's body: on one device's blocks


@dataclass(frozen=True)
class Program:
    """A function's traced program, as the checks read it."""

    steps: list[Step]  # every operation, those of nested programs (jit, shard_map) too
    # For every jax.vmap traced: the named axes bound around it, a shard_map's inside its
    # body, none outside.
    vmaps: list[frozenset]

    def named(self, *names: str) -> list[Step]:
        return [step for step in self.steps if step.name in names]


def trace(fn: Callable, args: tuple, traced: tuple[int, ...]) -> Program:
    """fn(*args) traced, its arrays abstract, and read step by step.

    Caches are cleared first: a jit the function calls may have been traced by an earlier
    call with the same shapes, and a vmap inside it would then not be traced again.
    """
    jax.clear_caches()
    vmaps: list[frozenset] = []
    jaxpr = traced_program(fn, args, traced, vmaps)
    return Program(program_steps(jaxpr, traced), vmaps)


# Operations that move, reshape or stack a value without computing anything new from it.
MOVES = {
    "device_put",
    "reshard",
    "sharding_constraint",
    "mesh_cast",
    "copy",
    "copy_p",
    "reshape",
    "broadcast_in_dim",
    "squeeze",
    "expand_dims",
    "concatenate",
    "stack",
    "convert_element_type",
    "pvary",
}
# Operations that call a program of their own, with one operand per input of it and one
# result per output: what goes in and out of it maps one to one.
CALLS = {
    "jit",
    "pjit",
    "closed_call",
    "core_call",
    "remat",
    "checkpoint",
    "custom_jvp_call",
    "custom_vjp_call",
}

_State = tuple[
    frozenset, frozenset, frozenset
]  # (arguments, steps it comes from, returned)
_NOTHING: _State = (frozenset(), frozenset(), frozenset())


def program_steps(jaxpr, positions: tuple[int, ...]) -> list[Step]:
    """Every operation of `jaxpr`, whose inputs are the arguments at `positions`.

    A value is made from an argument if it is the argument or was computed from a value
    made from it; a step reaches the result if the result was computed from its output.
    Inside a call (jit, shard_map), values map one to one to the call's operands and
    results; inside anything else (a loop, a cond), every value of the call counts for all.
    """
    found: list[tuple] = []

    def union(sets) -> frozenset:
        return frozenset().union(*sets)

    def walk(program, inputs: list[_State], manual: bool) -> list[_State]:
        env: dict = dict(zip(program.invars, inputs, strict=True))

        def read(var) -> _State:
            return _NOTHING if isinstance(var, Literal) else env.get(var, _NOTHING)

        for eqn in program.eqns:
            ins = [read(v) for v in eqn.invars]
            number = len(found)
            found.append(None)  # its place, filled once its inner steps are in
            args = union(s[0] for s in ins)
            came = union(s[1] for s in ins) | {number}
            name = eqn.primitive.name
            subs = [sub for value in eqn.params.values() for sub in _subjaxprs(value)]
            inner = []
            for sub in subs:
                if len(sub.invars) == len(ins):
                    into = ins
                else:
                    into = [(args, came, frozenset())] * len(sub.invars)
                inner.append(walk(sub, into, manual or name == "shard_map"))
            n = len(eqn.outvars)
            if name == "shard_map" and inner and len(inner[0]) == n:
                outs = [(a, c | came, frozenset({number})) for a, c, _ in inner[0]]
            elif name in CALLS and len(inner) == 1 and len(inner[0]) == n:
                outs = [(a, c | {number}, r) for a, c, r in inner[0]]
            elif inner:  # control flow: every output may come from anything inside
                every = [s for states in inner for s in states]
                outs = [
                    (
                        args | union(s[0] for s in every),
                        came | union(s[1] for s in every),
                        frozenset(),
                    )
                ] * n
            else:
                returned = union(s[2] for s in ins) if name in MOVES else frozenset()
                outs = [(args, came, returned)] * n
            env.update(zip(eqn.outvars, outs, strict=True))
            found[number] = (
                name,
                dict(eqn.params),
                tuple(s[0] for s in ins),
                tuple(tuple(getattr(v.aval, "shape", ())) for v in eqn.invars),
                tuple(tuple(getattr(v.aval, "shape", ())) for v in eqn.outvars),
                manual,
            )
        return [read(v) for v in program.outvars]

    results = walk(
        jaxpr, [(frozenset({p}), frozenset(), frozenset()) for p in positions], False
    )
    reached = union(s[1] for s in results)
    returned = union(s[2] for s in results)
    return [
        Step(
            name,
            params,
            operands,
            shapes,
            outs,
            number in reached,
            number in returned,
            manual,
        )
        for number, (name, params, operands, shapes, outs, manual) in enumerate(found)
    ]


def host_work_problems(fn: Callable, args: tuple, traced: tuple[int, ...]) -> Problems:
    """The work runs on the devices: fn traces with its arrays abstract."""
    try:
        traced_program(fn, args, traced)
    except jax.errors.TracerArrayConversionError:
        return [HOST_WORK]
    except Exception:  # anything else is the cases' business, and they report it
        return []
    return []


HOST_WORK = (
    "it computes the result with NumPy on the host and then places it: the grader "
    "traced it (jax.make_jaxpr) and it needed the values on the host. Compute with "
    "jax.numpy on the placed arrays, so the devices do the work."
)


def untraceable_problem(err: Exception, where: str, exercise: Exercise) -> str:
    """Why a function whose program must be read could not be traced, and what to change.

    `where` is the learner's traceback lines, to show under the sentence.
    """
    if isinstance(err, jax.errors.TracerArrayConversionError):
        cause = (
            "it turns a traced array into a NumPy array (np.asarray or np.array on an "
            "input, or on something computed from one), so that part of the work runs "
            "on the host."
        )
    elif isinstance(
        err,
        jax.errors.ConcretizationTypeError | jax.errors.TracerIntegerConversionError,
    ):
        cause = (
            "it needs the value of a traced array on the host (float(), int(), bool(), "
            ".item() or an `if` on an array's value)."
        )
    else:
        cause = f"it raised {type(err).__name__} while being traced."
    if exercise.sharded is not None:
        checked, tools = "that a shard_map does the work", "jax.numpy and jax.shard_map"
    else:
        checked = "its program (" + ", ".join(exercise.rules_words) + ")"
        tools = "jax.numpy and jax.lax"
    return (
        f"the grader could not trace it with jax.make_jaxpr, so it cannot check "
        f"{checked}: {cause} Keep the work in JAX: {tools} on the arrays it is given, "
        "so that the whole function can be traced.\n" + where
    )


def _names(entry) -> tuple[str, ...]:
    """The mesh axes a spec entry names: None, 'x' or ('x', 'y')."""
    if entry is None:
        return ()
    return (entry,) if isinstance(entry, str) else tuple(entry)


def _spec_entries(spec, ndim: int | None = None) -> tuple[tuple[str, ...], ...]:
    entries = [_names(e) for e in (spec or ())]
    if ndim is not None:
        entries += [()] * (ndim - len(entries))
    while entries and not entries[-1]:
        entries.pop()
    return tuple(entries)


def _shown(spec) -> str:
    entries = [
        None if not e else e[0] if len(e) == 1 else e for e in _spec_entries(spec)
    ]
    return str(jax.P(*entries))


def split_problems(step: Step, split: Split, args: tuple) -> Problems:
    """Does this shard_map split `split.what` as the statement says?"""
    given = [j for j, made in enumerate(step.operands) if split.argument in made]
    if not given:
        return [
            f"its shard_map is not given {split.what}: pass them to it (placed or "
            "resharded if need be), so that each device works on its block."
        ]
    mesh = step.params["mesh"]
    specs = step.params["in_specs"]
    problems: Problems = []
    for j in given:
        entries = _spec_entries(specs[j], len(step.shapes[j]))
        names = entries[split.dim] if split.dim < len(entries) else ()
        ways = math.prod(mesh.shape[n] for n in names)
        others = [d for d, e in enumerate(entries) if e and d != split.dim]
        axis = split.axis or (entries[others[0]][0] if others else mesh.axis_names[0])
        spec = f"P({', '.join(['None'] * split.dim + [repr(axis)])})"
        if not names and others:
            problem = (
                f"its shard_map splits dimension {others[0]} (in_specs "
                f"{_shown(specs[j])}), not {split.what}, dimension {split.dim}: the "
                f"exercise splits those, e.g. in_specs={spec}."
            )
        elif not names:
            problem = (
                f"its shard_map gives every device the whole input: its in_specs "
                f"{_shown(specs[j])} does not split {split.what} (dimension "
                f"{split.dim}), so nothing is split. Name the mesh axis they go over, "
                f"e.g. in_specs={spec}."
            )
        elif split.axis is not None and names != (split.axis,):
            problem = (
                f"its shard_map splits {split.what} over {list(names)}; the exercise "
                f"splits them over mesh axis '{split.axis}' alone: in_specs={spec}."
            )
        elif split.devices is not None and ways != split.devices(args)[0]:
            wanted, why = split.devices(args)
            problem = (
                f"its shard_map splits {split.what} over {ways} "
                f"device{'s' if ways != 1 else ''}; this case needs {wanted}: {why}"
            )
        else:
            return []
        problems.append(problem)
    return problems[:1]


def sharded_work_problems(program: Program, work: ShardedWork, args: tuple) -> Problems:
    """For an exercise whose work must run in a shard_map: is it split as the statement
    says, over the devices it says, and is what it computes what the function returns?"""
    maps = program.named("shard_map")
    if not maps:
        return []  # the operation check says that there is none
    live = [step for step in maps if step.reaches]
    if not live:
        return [
            "what its shard_map computes never reaches the result: the function returns "
            "something computed another way. Return (or build the result from) the "
            "shard_map's output."
        ]
    first: Problems = []
    for step in live:
        problems: Problems = []
        for split in work.splits:
            problems += split_problems(step, split, args)
        if not problems and work.out_specs is not None:
            got = step.params["out_specs"][0]
            if _spec_entries(got) != _spec_entries(work.out_specs):
                problems.append(
                    f"its shard_map has out_specs={_shown(got)}; the task asks for "
                    f"out_specs={_shown(work.out_specs)}."
                )
        if not problems and work.returned and not step.returned:
            problems.append(
                "the function does not return what its shard_map computes: it computes "
                "more from the shard_map's output, outside the shard_map. Do that work "
                "in the body, and return the shard_map's output (moving it, reshaping "
                "or stacking it is fine)."
            )
        if not problems:
            return []
        first = first or problems
    return first


def called_primitives(fn: Callable, args: tuple) -> set[str]:
    """The primitives bound while fn(*args) runs eagerly.

    For functions that jax.make_jaxpr cannot trace (one that reads `.sharding` off a
    result, say), this records every primitive as it is bound. It patches an internal
    of JAX, only for the duration of the call. JAX's caches are cleared first: a jitted
    function (`jnp.sin` is one) called before with the same shapes runs its compiled
    program without binding anything, and its primitives would go unseen.
    """
    import jax
    from jax._src import core

    jax.clear_caches()
    seen: set[str] = set()
    original = core.Primitive.bind

    def recording_bind(self, *bind_args, **params):
        seen.add(self.name)
        return original(self, *bind_args, **params)

    core.Primitive.bind = recording_bind
    try:
        fn(*args)
    finally:
        core.Primitive.bind = original
    return seen


def program_problems(exercise: Exercise, names: set[str]) -> Problems:
    problems = []
    for op in exercise.requires:
        spelled, primitives = OPERATIONS[op]
        if not names & primitives:
            problems.append(
                f"it does not use {spelled}: the traced program (jax.make_jaxpr) has no "
                f"{op}. {exercise.hints.get(op, '')}".rstrip()
            )
    for op in exercise.forbids:
        spelled, primitives = OPERATIONS[op]
        if names & primitives:
            problems.append(
                f"it uses {spelled}, which this exercise rules out. "
                f"{exercise.hints.get(op, '')}".rstrip()
            )
    return problems


def byte_count(n: int) -> str:
    return f"{n:,} bytes"


def per_device_param_bytes(arrays: dict[str, jax.Array]) -> dict[int, int]:
    """Device id -> bytes of the given arrays that the device stores."""
    held: dict[int, int] = {}
    for array in arrays.values():
        for shard in array.addressable_shards:
            held[shard.device.id] = held.get(shard.device.id, 0) + shard.data.nbytes
    return held


def total_bytes(arrays: dict[str, jax.Array]) -> int:
    return sum(math.prod(a.shape) * a.dtype.itemsize for a in arrays.values())
