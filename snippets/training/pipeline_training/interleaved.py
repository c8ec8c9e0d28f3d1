"""The interleaved (circular) 1F1B schedule as a table: each of S devices holds v chunks of
layers, device d the virtual stages d, d + S, d + 2S, ..., so a microbatch goes round the
ring of devices v times. A job is (op, microbatch, chunk), and a table
{(step, device): job} counts chunk-slots: each job is one chunk's forward or backward.

The order is Megatron-LM's (Narayanan et al. 2021, "Efficient Large-Scale Language Model
Training on GPU Clusters Using Megatron-LM"; the code:
https://github.com/NVIDIA/Megatron-LM/blob/main/megatron/core/pipeline_parallel/schedules.py,
forward_backward_pipelining_with_interleaving, its warm-up count and get_model_chunk_id).

Run `python -m snippets.training.pipeline_training.interleaved` to print what the page shows.
"""

# --8<-- [start:imports]
from fractions import Fraction

# --8<-- [end:imports]
# On the page, these are defined by earlier blocks.
from snippets.training.pipeline_training.schedule import run_orders, stage_order


# --8<-- [start:order]
def interleaved_order(num_devices: int, num_chunks: int, num_microbatches: int, device):
    """One device's jobs, ("F" or "B", microbatch, chunk), in Megatron-LM's order."""
    check_interleaved_counts(num_devices, num_chunks, num_microbatches)
    S, v, M = num_devices, num_chunks, num_microbatches
    if v == 1:  # one chunk each: Megatron runs plain 1F1B
        return [(op, m, 0) for op, m in stage_order("1f1b", S, M, device)]

    def job(k: int, op: str) -> tuple:  # the device's k-th forward or backward
        group, k = divmod(k, S * v)
        # backwards run the chunks in reverse: the last chunk's first
        chunk = k // S if op == "F" else v - 1 - k // S
        return (op, group * S + k % S, chunk)

    jobs = M * v
    forwards = [job(k, "F") for k in range(jobs)]
    backwards = [job(k, "B") for k in range(jobs)]
    # Megatron's special case: with M == S, every forward runs first
    warmup = jobs if M == S else min(2 * (S - 1 - device) + (v - 1) * S, jobs)
    steady = [
        op for pair in zip(forwards[warmup:], backwards, strict=False) for op in pair
    ]
    return forwards[:warmup] + steady + backwards[jobs - warmup :]


# --8<-- [end:order]


# --8<-- [start:needs]
def chunk_needs(job: tuple, device: int, num_devices: int, num_chunks: int):
    """The (job, device) whose output `job` takes as input; None for the first forward.
    Chunk c on device d is virtual stage c * S + d; its neighbours sit one device over."""
    op, m, chunk = job
    stage, last = chunk * num_devices + device, num_chunks * num_devices - 1
    if op == "F" and stage == 0:
        return None
    if op == "B" and stage == last:  # the backward starts from the last forward
        return ("F", m, chunk), device
    source = stage - 1 if op == "F" else stage + 1
    return (op, m, source // num_devices), source % num_devices


# --8<-- [end:needs]


# --8<-- [start:make-interleaved]
def make_interleaved(num_devices: int, num_chunks: int, num_microbatches: int) -> dict:
    """{(step, device): (op, microbatch, chunk)}, each job once its input exists."""
    check_interleaved_counts(num_devices, num_chunks, num_microbatches)
    orders = [
        interleaved_order(num_devices, num_chunks, num_microbatches, d)
        for d in range(num_devices)
    ]
    return run_orders(
        orders, lambda job, d: chunk_needs(job, d, num_devices, num_chunks)
    )


# --8<-- [end:make-interleaved]


# --8<-- [start:check-counts]
def check_interleaved_counts(num_devices, num_chunks, num_microbatches) -> None:
    counts = [
        ("devices", num_devices),
        ("chunks per device", num_chunks),
        ("microbatches", num_microbatches),
    ]
    for name, value in counts:
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(
                f"an interleaved schedule needs a whole number of {name}, at least 1; "
                f"got {value!r}."
            )
    if num_chunks > 1 and num_microbatches % num_devices:
        raise ValueError(
            f"the interleaved order runs microbatches in groups of {num_devices}: "
            f"{num_microbatches} is not a multiple of {num_devices}; use "
            f"{-(-num_microbatches // num_devices) * num_devices}, say."
        )


# --8<-- [end:check-counts]


# --8<-- [start:check-interleaved]
def check_interleaved(table: dict, num_devices, num_chunks, num_microbatches) -> None:
    """Refuse a table that is not an interleaved training schedule, saying what is wrong."""
    check_interleaved_counts(num_devices, num_chunks, num_microbatches)
    at = {}  # (job, device) -> step
    for (step, device), job in table.items():
        if not 0 <= device < num_devices or step < 0:
            raise ValueError(f"step {step}, device {device}: no such slot.")
        if (
            len(job) != 3
            or job[0] not in ("F", "B")
            or not 0 <= job[1] < num_microbatches
            or not 0 <= job[2] < num_chunks
        ):
            raise ValueError(f"step {step}, device {device}: {job!r} is not a job.")
        if (job, device) in at:
            raise ValueError(f"device {device} runs {name(job)} twice.")
        at[job, device] = step
    for device in range(num_devices):
        for m in range(num_microbatches):
            for chunk in range(num_chunks):
                for op in "FB":
                    job = (op, m, chunk)
                    if (job, device) not in at:
                        raise ValueError(f"device {device} never runs {name(job)}.")
                    needed = chunk_needs(job, device, num_devices, num_chunks)
                    if needed is not None and at[needed] >= at[job, device]:
                        raise ValueError(
                            f"device {device} runs {name(job)} at step "
                            f"{at[job, device]}, but its input, {name(needed[0])} on "
                            f"device {needed[1]}, is only done at step {at[needed]}: "
                            "run it later."
                        )


def name(job: tuple) -> str:
    """F3c1: the forward of microbatch 3 through chunk 1."""
    return f"{job[0]}{job[1]}c{job[2]}"


# --8<-- [end:check-interleaved]


# --8<-- [start:measure]
def held_chunks(table: dict, num_devices: int, num_chunks: int) -> list[int]:
    """Per device, the most (microbatch, chunk) inputs it keeps at once: from the step
    the input arrives until that chunk's backward has used it."""
    at = {(job, d): t for (t, d), job in table.items()}
    most = []
    for device in range(num_devices):
        spans = []
        for (job, d), t in at.items():
            if d == device and job[0] == "F":
                needed = chunk_needs(job, d, num_devices, num_chunks)
                start = t if needed is None else at[needed] + 1
                spans.append((start, at[("B", *job[1:]), d]))
        most.append(max(sum(a <= t <= b for a, b in spans) for _, t in spans))
    return most


def hops(table: dict, num_devices: int, num_chunks: int) -> int:
    """How many jobs take their input from another device: one transfer each."""
    return sum(
        (n := chunk_needs(job, d, num_devices, num_chunks)) is not None and n[1] != d
        for (_, d), job in table.items()
    )


def measure(num_devices: int, num_chunks: int, num_microbatches: int) -> dict:
    S, v, M = num_devices, num_chunks, num_microbatches
    table = make_interleaved(S, v, M)  # check_interleaved holds it (the tests)
    slots = max(t for t, _ in table) + 1
    return {
        "chunk-slots": slots,
        "full steps": Fraction(slots, v),
        "idle": Fraction(slots * S - len(table), slots * S),
        "formula": Fraction(S - 1, v * M + S - 1),
        "held": held_chunks(table, S, v),
        "hops per microbatch": Fraction(hops(table, S, v), M),
    }


# --8<-- [end:measure]


def show_interleaved() -> dict:
    # --8<-- [start:show-interleaved]
    interleaved_table = make_interleaved(4, 2, 8)
    # --8<-- [end:show-interleaved]
    return interleaved_table


def show_costs() -> None:
    # --8<-- [start:show-costs]
    print("v  chunk-slots  full steps  idle  (S-1)/(vM+S-1)  held per device   hops/mb")
    for v in (1, 2, 4):
        r = measure(4, v, 8)
        print(
            f"{v}  {r['chunk-slots']:11}  {r['full steps']!s:>10}  "
            f"{r['idle']!s:>4}  {r['formula']!s:>14}  {r['held']!s:16}  "
            f"{r['hops per microbatch']!s:>7}"
        )
    # --8<-- [end:show-costs]


def bad_interleaved() -> None:
    # --8<-- [start:bad-interleaved]
    for wrong in [
        lambda: make_interleaved(4, 2, 6),
        lambda: make_interleaved(4, 0, 8),
    ]:
        try:
            wrong()
        except ValueError as err:
            print(f"ValueError: {err}")
    # --8<-- [end:bad-interleaved]


def main() -> None:
    show_interleaved()
    show_costs()
    bad_interleaved()


if __name__ == "__main__":
    main()
