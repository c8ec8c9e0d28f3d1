"""Check your solution to an exercise of this site against its hidden cases.

    python -m snippets.exercises.check <exercise> <file.py>
    python -m snippets.exercises.check --list

The file is loaded on 8 virtual CPU devices, its function is called on each hidden case, and
what is wrong is printed in words: a wrong shape or value (the first mismatch), a result laid
out on the devices other than asked, an operation the exercise requires (such as jax.shard_map)
missing from the traced program, or one it rules out present, or a shard_map that does not
split the work the way the statement says. Exit status: 0 when every check passes, 1 when one
fails, 2 for a usage error (such as an unknown exercise).
"""

from __future__ import annotations

import contextlib
import gc
import inspect
import sys
import textwrap
import traceback
import types
from pathlib import Path

USAGE = "usage: python -m snippets.exercises.check <exercise> <file.py>"
MAX_MESSAGE_LINES = 8
WIDTH = 76  # the grader wraps what it prints: it fits a page's output box


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    from snippets.exercises.registry import EXERCISES

    if args and args[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    if args == ["--list"]:
        print(exercise_list(EXERCISES))
        return 0
    if len(args) != 2:
        print(f"{USAGE}\n(or --list to see the exercises)")
        return 2
    name, file = args
    if name not in EXERCISES:
        print(f"There is no exercise called {name!r}. The exercises are:")
        print(exercise_list(EXERCISES))
        print(USAGE)
        return 2
    return grade_file(EXERCISES[name], file, USAGE)


def grade_file(exercise, file: str, usage: str) -> int:
    """Grade one exercise's answer in `file`: the command line's work once the exercise is
    known (the one-file grader of an exercise, docs_build/graders.py, calls it too)."""
    path = Path(file)
    if not path.is_file():
        print(f"There is no file {file} (looked in {path.resolve().parent}).")
        print(usage)
        return 2
    if not devices_ready():
        return 2
    return grade(exercise, path)


def devices_ready() -> bool:
    """8 virtual CPU devices for JAX, before the learner's code can start it; or say why not."""
    from docs_build.devices import DeviceSetupError, use_cpu_devices

    try:
        use_cpu_devices(8)
    except DeviceSetupError as err:
        print(err)
        return False
    return True


def grade_function(exercise, fn) -> int:
    """Grade a function already defined, in a notebook say: as `grade` does a file's.

    Tracebacks show the lines of the file (or notebook cell) that defines `fn`.
    """
    if not devices_ready():
        return 2
    from snippets.exercises.grading import kind

    if not callable(fn):
        print(
            f"check() takes your function {exercise.name} itself, not {kind(fn)}: "
            f"check({exercise.name})."
        )
        return 1
    if problem := signature_problem(exercise, fn):
        print(problem)
        return 1
    code = getattr(fn, "__code__", None)
    shown = code.co_filename if code is not None else f"<{exercise.name}>"
    where = "this notebook" if fn.__module__ == "__main__" else fn.__module__
    return run_cases(exercise, fn, shown, where)


def exercise_list(exercises: dict) -> str:
    width = max(map(len, exercises))
    return "\n".join(f"  {name:<{width}}  {ex.title}" for name, ex in exercises.items())


def grade(exercise, path: Path) -> int:
    """Load the file, find the function, run every case; print what is wrong."""
    shown = str(path)
    try:
        source = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        print(f"{shown} is not a text file in UTF-8: is it the right file?")
        return 1
    try:
        code = compile(source, shown, "exec")
    except SyntaxError as err:
        print(syntax_message(err, shown))
        return 1

    module = types.ModuleType("exercise_solution")
    module.__file__ = str(path.resolve())
    sys.modules[module.__name__] = module  # dataclasses and pickling look here
    try:
        try:
            exec(code, module.__dict__)
        except (Exception, SystemExit) as err:
            print(f"{shown} raised an exception while it was being loaded:")
            print(reader_traceback(err, shown))
            if "jax_num_cpu_devices" in str(err):
                print(
                    "Hint: the grader gives JAX 8 CPU devices before it loads your "
                    "file, so the file cannot ask for another number: remove its "
                    "jax.config.update lines (or ask for 8)."
                )
            return 1
        fn = module.__dict__.get(exercise.name)
        if not callable(fn):
            print(missing_function_message(exercise, module, shown))
            return 1
        if problem := signature_problem(exercise, fn):
            print(problem)
            return 1
        return run_cases(exercise, fn, shown)
    finally:
        sys.modules.pop(module.__name__, None)


def syntax_message(err: SyntaxError, shown: str) -> str:
    lines = [f"{shown}, line {err.lineno}: {type(err).__name__}: {err.msg}"]
    if err.text:
        text = err.text.rstrip("\n")
        stripped = text.lstrip()
        lines.append(f"    {stripped}")
        if err.offset:
            caret = max(1, err.offset - (len(text) - len(stripped)))
            lines.append(" " * (3 + caret) + "^")
    lines.append("Python could not read the file: fix that line, then check again.")
    return "\n".join(lines)


def missing_function_message(exercise, module: types.ModuleType, shown: str) -> str:
    defined = [
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and inspect.isfunction(value)
        and value.__module__ == module.__name__
    ]
    expected = f"{exercise.name}({', '.join(exercise.params)})"
    found = (
        f"It defines: {', '.join(defined)}." if defined else "It defines no functions."
    )
    value = vars(module).get(exercise.name)
    if value is not None:
        found = f"{exercise.name} is {type(value).__name__}, not a function. " + found
    return (
        f"{shown} has no function {exercise.name}. {found}\n"
        f"Define {expected}, as in snippets/exercises/{exercise.name}/starter.py."
    )


def signature_problem(exercise, fn) -> str | None:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None  # nothing to compare with; the call will tell
    try:
        signature.bind(*exercise.params)
    except TypeError:
        return (
            f"{exercise.name} takes the wrong arguments.\n"
            f"  expected: {exercise.name}({', '.join(exercise.params)})\n"
            f"  got:      {exercise.name}({parameter_list(signature)})\n"
            f"The grader calls it with {len(exercise.params)} positional argument(s), "
            f"in that order."
        )
    return None


def parameter_list(signature: inspect.Signature) -> str:
    shown = []
    for p in signature.parameters.values():
        text = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "") + p.name
        shown.append(text + ("=..." if p.default is not p.empty else ""))
    return ", ".join(shown)


def reader_traceback(
    err: BaseException, shown: str, most: int = MAX_MESSAGE_LINES
) -> str:
    """The traceback lines in the learner's file, then the exception (its first `most`
    lines): nothing of ours."""
    frames = [f for f in traceback.extract_tb(err.__traceback__) if f.filename == shown]
    lines = []
    for frame in frames:
        lines.append(f'  File "{shown}", line {frame.lineno}, in {frame.name}')
        if frame.line:
            lines.append(f"    {frame.line.strip()}")
    message = str(err).strip().splitlines() or [""]
    if len(message) > most:
        message = [*message[:most], "..."]
    first = f"{type(err).__name__}: {message[0]}".rstrip(": ")
    lines.extend(f"  {line}" for line in [first, *message[1:]])
    return "\n".join(lines)


def run_cases(exercise, fn, shown: str, where: str | None = None) -> int:
    """Every hidden case, then the program check; `shown` is the learner's file (its
    traceback lines are the ones shown), `where` says where fn came from, if not there."""
    from snippets.exercises.grading import host_work_problems

    cases = exercise.cases()
    print(
        wrap(
            f"Checking {exercise.name} from {where or shown} on {len(cases)} hidden cases "
            f"(8 virtual CPU devices).",
            0,
        )
    )
    passed, probe, also = 0, None, []
    for number, case in enumerate(cases, 1):
        try:
            args = case.args()
        except Exception as err:  # a bug of the grader's, not of the learner's file
            print(
                f"The grader could not build case {number}: {err!r}. Please report it."
            )
            return 2
        with failed_loads_kept_quiet() as quiet:
            problems = call_problems(exercise, fn, case, args, shown)
            quiet.collect = (
                bool(problems) or case.raises is not None
            )  # it may have raised
        report(f"case {number} of {len(cases)} ({case.about})", problems)
        passed += not problems
        if case.raises is None:
            if probe is None:
                probe = (number, case)
            elif not problems:
                also.append((number, case))  # its program is read too
        if problems and number < len(cases):
            rest = len(cases) - number
            print(f"  ...     {rest} more case(s) not run: fix this one first.")
            break

    program_ok = True
    read = bool(exercise.requires or exercise.forbids or exercise.must_trace)
    if exercise.on_device and probe is not None and not read:
        problems = host_work_problems(fn, probe[1].args(), exercise.traced)
        report("program (runs on the devices)", problems)
        program_ok = not problems
    if read and probe is not None:
        problems = program_problems_of(exercise, fn, [probe, *also], shown)
        if problems is not None:  # else it raised, and the cases above say so
            wanted = [f"uses {op}" for op in exercise.requires]
            if exercise.on_device and not exercise.must_trace:
                wanted.insert(0, "runs on the devices")
            wanted += exercise.rules_words
            avoided = ", ".join(f"no {op}" for op in exercise.forbids)
            title = "; ".join(filter(None, [", ".join(wanted), avoided]))
            report(f"program ({title})", problems)
            program_ok = program_ok and not problems

    print()
    if passed == len(cases) and program_ok:
        print(f"PASSED: {exercise.name} is right on all {len(cases)} hidden cases.")
        return 0
    failed = len(cases) - passed
    summary = (
        f"{passed} of {len(cases)} cases passed" if failed else "every case passed"
    )
    if not program_ok:
        summary += (
            ", and the program check failed"
            if failed
            else ", but the program check failed"
        )
    print(wrap(f"NOT YET: {summary}. Fix {exercise.name} and run the check again.", 0))
    return 1


def program_problems_of(exercise, fn, cases: list, shown: str) -> list[str] | None:
    """What is wrong with the traced program of each case in turn (the first case's, then
    those of the cases that passed), or None when there is nothing to say.

    An exercise about an operation reads the program of the first case only; one whose
    work must be done by a shard_map, or with rules of its own, reads every one: how many
    devices split the work can depend on the case.
    """
    import jax

    from snippets.exercises.grading import (
        HOST_WORK,
        called_primitives,
        program_problems,
        sharded_work_problems,
        trace,
        untraceable_problem,
    )

    for index, (number, case) in enumerate(cases):
        if index and not exercise.must_trace:
            break
        args = case.args()
        try:
            program = trace(fn, args, exercise.traced)
        except Exception as err:
            if isinstance(err, jax.errors.TracerArrayConversionError) and (
                exercise.on_device and not exercise.must_trace
            ):
                return [HOST_WORK]
            # Not traceable as a whole. If a plain call fails too, the cases say so.
            try:
                names = called_primitives(fn, case.args())
            except (Exception, SystemExit):
                return None
            if exercise.must_trace:
                where = reader_traceback(err, shown, most=1)
                return [
                    in_case(index, number, case)
                    + untraceable_problem(err, where, exercise)
                ]
            # It may need a concrete array (its .addressable_shards, say), which a
            # plain call has: the operations that call binds are what it uses.
            return program_problems(exercise, names)
        names = {step.name for step in program.steps}
        problems = program_problems(exercise, names) if index == 0 else []
        if not problems and exercise.sharded is not None:
            problems = sharded_work_problems(program, exercise.sharded, args)
        if not problems and exercise.rules is not None:
            problems = exercise.rules(fn, args, program)
        if problems:
            return [in_case(index, number, case) + p for p in problems]
    return []


def in_case(index: int, number: int, case) -> str:
    """Where a program problem was found, unless in the first case read."""
    return f"in case {number} ({case.about}), " if index else ""


@contextlib.contextmanager
def failed_loads_kept_quiet():
    """Drop what a failed Orbax load leaves behind: its unfinished reads, which print
    "Exception ignored ... Event loop is closed" tracebacks when they are collected, long
    after the grader has reported the load's own error. Anything else is reported as usual."""
    default = sys.unraisablehook

    def hook(unraisable):
        culprit = getattr(unraisable.object, "cr_code", None)
        from_orbax = culprit is not None and "orbax" in culprit.co_filename
        closed = isinstance(unraisable.exc_value, RuntimeError) and (
            "Event loop is closed" in str(unraisable.exc_value)
        )
        if not (from_orbax or closed):
            default(unraisable)

    sys.unraisablehook = hook
    state = types.SimpleNamespace(collect=False)
    try:
        yield state
        if state.collect:
            gc.collect()  # a failed load's leftovers, while the hook is in place
    finally:
        sys.unraisablehook = default


def call_problems(exercise, fn, case, args: tuple, shown: str) -> list[str]:
    from snippets.exercises.grading import kind

    watching = case.watch() if case.watch is not None else contextlib.nullcontext()
    try:
        with watching:
            got = fn(*args)
    except (Exception, SystemExit) as err:
        if case.raises is not None and isinstance(err, case.raises):
            text = str(err)
            missing = [w for w in case.message_has if w not in text]
            if missing:
                quoted = " and ".join(repr(w) for w in missing)
                return [
                    f"it raised {type(err).__name__}, as it should, but its message "
                    f"should tell the caller what to change (mention {quoted}). "
                    f"It says: {text}"
                ]
            return []
        if case.raises is not None:
            return [
                f"it should raise {case.raises.__name__}, but it raised "
                f"{type(err).__name__}:\n" + reader_traceback(err, shown)
            ]
        advice = [a for words, a in exercise.on_error.items() if words in str(err)]
        return [
            "your code raised an exception:\n"
            + reader_traceback(err, shown)
            + "".join(f"\nHint: {a}" for a in advice)
        ]
    if case.raises is not None:
        return [
            f"it should raise {case.raises.__name__} for these arguments, but it "
            f"returned {kind(got)}."
        ]
    try:
        return case.check(got, args)
    except Exception as err:  # a result so unexpected that a check could not read it
        return [f"the grader could not read what it returned ({kind(got)}): {err}"]


def report(title: str, problems: list[str]) -> None:
    """One line per case, ok or FAILED, then what is wrong, wrapped to WIDTH columns."""
    print(wrap(f"  {'FAILED' if problems else 'ok':<6}  {title}", 10))
    for problem in problems:
        first, *rest = problem.splitlines()
        print(wrap(f"    - {first}", 6))
        code = False  # a traceback's File lines, and the code after each, stay whole
        for line in rest:
            shown = "      " + line
            is_file = line.lstrip().startswith('File "')
            whole = code or is_file
            print(shown if whole else wrap(shown, len(shown) - len(shown.lstrip())))
            code = is_file


def wrap(text: str, indent: int) -> str:
    return textwrap.fill(
        text,
        width=WIDTH,
        subsequent_indent=" " * indent,
        break_long_words=False,
        break_on_hyphens=False,
    )


if __name__ == "__main__":
    sys.exit(main())
