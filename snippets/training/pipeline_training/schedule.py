"""Training schedules as tables: which stage runs the forward (F) or backward (B) pass of which
microbatch at each step, generated for GPipe and 1F1B, checked, and what each holds.

Run `python -m snippets.training.pipeline_training.schedule` to print what the page shows.
"""

# --8<-- [start:imports]
from fractions import Fraction

# --8<-- [end:imports]


# --8<-- [start:orders]
def stage_order(kind: str, num_stages: int, num_microbatches: int, stage: int):
    """The order in which one stage runs its work: ("F", m) and ("B", m) pairs."""
    forwards = [("F", m) for m in range(num_microbatches)]
    backwards = [("B", m) for m in range(num_microbatches)]
    if kind == "gpipe":  # every forward, then every backward
        return forwards + backwards
    if kind == "1f1b":  # a few forwards to fill the pipe, then one of each in turn
        warmup = min(num_stages - 1 - stage, num_microbatches)
        steady = [
            op
            for pair in zip(forwards[warmup:], backwards, strict=False)
            for op in pair
        ]
        return forwards[:warmup] + steady + backwards[num_microbatches - warmup :]
    raise ValueError(f"unknown schedule {kind!r}: use 'gpipe' or '1f1b'.")


# --8<-- [end:orders]


# --8<-- [start:make-schedule]
def make_schedule(kind: str, num_stages: int, num_microbatches: int) -> dict:
    """{(step, stage): ("F" or "B", microbatch)}: each stage runs its order, each job
    as soon as what it needs arrived (F from the stage before, B from the stage after)."""
    check_counts(num_stages, num_microbatches)
    orders = [
        stage_order(kind, num_stages, num_microbatches, s) for s in range(num_stages)
    ]
    return run_orders(orders, lambda job, stage: stage_needs(job, stage, num_stages))


def stage_needs(job: tuple, stage: int, num_stages: int):
    """The (job, stage) whose output `job` takes as input; None for a first forward."""
    op, m = job
    if op == "F":
        return (("F", m), stage - 1) if stage > 0 else None
    # the last stage starts the backward pass from its own forward result
    return (("B", m), stage + 1) if stage < num_stages - 1 else (("F", m), stage)


def run_orders(orders: list, needs) -> dict:
    """{(step, device): job}: each device runs its order; a job runs at the first step
    after the job it needs, `needs(job, device)`, is done."""
    todo = [list(order) for order in orders]
    done, table, step = {}, {}, 0  # done: (job, device) -> step
    while any(todo):
        ready = [
            d
            for d, jobs in enumerate(todo)
            if jobs and arrived(needs(jobs[0], d), done, step)
        ]
        if not ready:
            d = next(d for d, jobs in enumerate(todo) if jobs)
            raise ValueError(
                f"device {d} waits forever for the input of {todo[d][0]}: "
                "its order runs a job before the one it needs."
            )
        for d in ready:
            table[step, d] = todo[d].pop(0)
            done[table[step, d], d] = step
        step += 1
    return table


def arrived(needed, done: dict, step: int) -> bool:
    """Whether the needed (job, device), if any, was done before `step`."""
    return needed is None or done.get(needed, step) < step


# --8<-- [end:make-schedule]


# --8<-- [start:check-counts]
def check_counts(num_stages: int, num_microbatches: int) -> None:
    for name, value in [("stages", num_stages), ("microbatches", num_microbatches)]:
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(
                f"a schedule needs a whole number of {name}, at least 1; got {value!r}."
            )


# --8<-- [end:check-counts]


# --8<-- [start:check-schedule]
def check_schedule(table: dict, num_stages: int, num_microbatches: int) -> None:
    """Refuse a table that is not a training schedule, saying what is wrong."""
    check_counts(num_stages, num_microbatches)
    at = {}  # (op, microbatch, stage) -> step
    for (step, stage), (op, m) in table.items():
        if op not in ("F", "B") or not 0 <= m < num_microbatches:
            raise ValueError(f"step {step}, stage {stage}: {op}{m} is not a job.")
        if not 0 <= stage < num_stages or step < 0:
            raise ValueError(f"step {step}, stage {stage}: no such slot.")
        if (op, m, stage) in at:
            raise ValueError(f"stage {stage} runs {op}{m} twice.")
        at[op, m, stage] = step
    for stage in range(num_stages):
        for m in range(num_microbatches):
            for op in "FB":
                if (op, m, stage) not in at:
                    raise ValueError(f"stage {stage} never runs {op}{m}.")
            before = [("F", m, stage - 1)] if stage else []
            after = ("B", m, stage + 1) if stage < num_stages - 1 else ("F", m, stage)
            for needs, job in [(before, ("F", m, stage)), ([after], ("B", m, stage))]:
                for n in needs:
                    if at[n] >= at[job]:
                        raise ValueError(
                            f"stage {stage} runs {job[0]}{m} at step {at[job]}, but "
                            f"its input, {n[0]}{m} on stage {n[2]}, is only done "
                            f"at step {at[n]}: run it later."
                        )


# --8<-- [end:check-schedule]


# --8<-- [start:show-table]
def show_table(table: dict, num_stages: int) -> None:
    """A row per stage, a column per step: F3 / B3, or · where the stage idles."""
    steps = max(step for step, _ in table) + 1
    print("step    " + "".join(f"{t:>3}" for t in range(steps)))
    for stage in range(num_stages):
        cells = [table.get((t, stage)) for t in range(steps)]
        row = "".join(
            f"{op}{m}".rjust(3) if op else "  ·"
            for op, m in (c or (None, None) for c in cells)
        )
        print(f"stage {stage}" + row)


# --8<-- [end:show-table]


# --8<-- [start:held]
def held(table: dict, num_stages: int) -> list[int]:
    """Per stage, the most microbatches whose input it has received and whose
    backward it has not yet run: the activations it must keep at once."""
    at = {(op, m, s): t for (t, s), (op, m) in table.items()}
    most = []
    for s in range(num_stages):
        spans = [
            (at["F", m, s - 1] + 1 if s else at["F", m, s], at["B", m, s])
            for (op, m, stage) in at
            if op == "F" and stage == s
        ]
        steps = range(max(end for _, end in spans) + 1)
        most.append(max(sum(a <= t <= b for a, b in spans) for t in steps))
    return most


# --8<-- [end:held]


# --8<-- [start:idle]
def idle_share(table: dict, num_stages: int) -> Fraction:
    """The share of (step, stage) slots in which a stage runs nothing."""
    steps = max(step for step, _ in table) + 1
    return Fraction(steps * num_stages - len(table), steps * num_stages)


# --8<-- [end:idle]


def show_schedules() -> tuple[dict, dict]:
    # --8<-- [start:show-schedules]
    gpipe_table = make_schedule("gpipe", 4, 8)
    one_f_one_b = make_schedule("1f1b", 4, 8)
    print("GPipe")
    show_table(gpipe_table, 4)
    print("1F1B")
    show_table(one_f_one_b, 4)
    # --8<-- [end:show-schedules]
    return gpipe_table, one_f_one_b


def show_held(gpipe_table: dict, one_f_one_b: dict) -> None:
    # --8<-- [start:show-held]
    print("activations held per stage, GPipe:", held(gpipe_table, 4))
    print("activations held per stage, 1F1B: ", held(one_f_one_b, 4))
    # --8<-- [end:show-held]


def bad_schedules() -> None:
    # --8<-- [start:bad-schedules]
    table = make_schedule("1f1b", 4, 8)
    table[0, 3] = table.pop((3, 3))  # stage 3 starts F0 before it arrives
    for wrong in [
        lambda: make_schedule("1f1b", 4, 0),
        lambda: check_schedule(table, 4, 8),
    ]:
        try:
            wrong()
        except ValueError as err:
            print(f"ValueError: {err}")
    # --8<-- [end:bad-schedules]


def main() -> None:
    gpipe_table, one_f_one_b = show_schedules()
    show_held(gpipe_table, one_f_one_b)
    bad_schedules()


if __name__ == "__main__":
    main()
