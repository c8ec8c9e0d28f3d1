"""What the grader compares, and how it says what is wrong, in the learner's terms.

Each function returns a list of problems (sentences); an empty list means "fine". The
graders of the exercises (`snippets/exercises/<name>/grader.py`) build their checks from these.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
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
}


def number(value: Any) -> str:
    """A value as a learner would write it: 3, 2.5, -0.125, True."""
    value = np.asarray(value).item() if np.ndim(value) == 0 else value
    if isinstance(value, float):
        return f"{value:.6g}"
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
) -> Problems:
    """Shape and values of `got` against `expected`, with the first mismatch."""
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
    else:
        shown = f"a {type(sharding).__name__} over {devices} devices"
    return [f"wrong sharding: expected {spec}, got {shown}."]


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


def primitive_names(jaxpr) -> set[str]:
    """Every primitive in a jaxpr, including those of nested jaxprs (jit, shard_map, ...)."""
    names: set[str] = set()
    pending = [jaxpr]
    while pending:
        current = pending.pop()
        for eqn in current.eqns:
            names.add(eqn.primitive.name)
            for param in eqn.params.values():
                pending.extend(_subjaxprs(param))
    return names


def traced_program(fn: Callable, args: tuple, traced: tuple[int, ...]):
    """The jaxpr of fn(*args), the arguments at positions `traced` abstract arrays."""

    def with_arrays(*arrays):
        full = list(args)
        for position, array in zip(traced, arrays, strict=True):
            full[position] = array
        return fn(*full)

    return jax.make_jaxpr(with_arrays)(*(args[i] for i in traced)).jaxpr


def _splits(eqn) -> bool:
    """A shard_map that gives devices different blocks: an in_specs entry names an axis."""
    return any(
        entry is not None
        for spec in eqn.params.get("in_specs", ())
        for entry in (spec or ())
    )


def shard_map_flow(jaxpr) -> tuple[bool, bool]:
    """(a shard_map splits an input, and what it computes reaches the result).

    A value depends on a splitting shard_map if that shard_map made it, or it was made from
    such a value; a call (jit, another shard_map) whose own result depends on one counts as
    one. A shard_map whose result is thrown away, or that hands every device the whole
    input, does not show that the work was sharded.
    """
    tainted: set = set()
    splits = False
    for eqn in jaxpr.eqns:
        source = False
        if eqn.primitive.name == "shard_map" and _splits(eqn):
            source = splits = True
        for value in eqn.params.values():
            for sub in _subjaxprs(value):
                inner_splits, inner_reaches = shard_map_flow(sub)
                splits |= inner_splits
                source |= inner_reaches
        fed = any(v in tainted for v in eqn.invars if not isinstance(v, Literal))
        if source or fed:
            tainted.update(eqn.outvars)
    reaches = any(v in tainted for v in jaxpr.outvars if not isinstance(v, Literal))
    return splits, reaches


def host_work_problems(fn: Callable, args: tuple, traced: tuple[int, ...]) -> Problems:
    """The work runs on the devices: fn traces with its arrays abstract."""
    try:
        traced_program(fn, args, traced)
    except jax.errors.TracerArrayConversionError:
        return [
            "it computes the result with NumPy on the host and then places it: the "
            "grader traced it (jax.make_jaxpr) and it needed the values on the host. "
            "Compute with jax.numpy on the placed arrays, so the devices do the work."
        ]
    except Exception:  # anything else is the cases' business, and they report it
        return []
    return []


def sharded_work_problems(jaxpr) -> Problems:
    """For an exercise whose work must run in a shard_map: is it split, and is it used?"""
    splits, reaches = shard_map_flow(jaxpr)
    if not splits:
        return [
            "its shard_map gives every device the whole input: every in_specs entry is "
            "P() (or None), so nothing is split. Name the mesh axis the rows go over, "
            "e.g. in_specs=P('x')."
        ]
    if not reaches:
        return [
            "what its shard_map computes never reaches the result: the function returns "
            "something computed another way. Return (or build the result from) the "
            "shard_map's output."
        ]
    return []


def called_primitives(fn: Callable, args: tuple) -> set[str]:
    """The primitives bound while fn(*args) runs eagerly.

    For functions that jax.make_jaxpr cannot trace (one that reads `.sharding` off a
    result, say), this records every primitive as it is bound. It patches an internal
    of JAX, only for the duration of the call.
    """
    from jax._src import core

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
