"""Reference solution of the exercise `one_f_one_b` (pipeline training).

Run `python -m snippets.exercises.one_f_one_b.solution` to print a schedule.
"""


# --8<-- [start:solution]
def one_f_one_b(num_stages: int, num_microbatches: int) -> dict:
    """{(step, stage): ("F" or "B", microbatch)} of a 1F1B training step."""
    for value in (num_stages, num_microbatches):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"need whole numbers >= 1, got {value!r}.")
    orders = []
    for s in range(num_stages):
        warmup = min(num_stages - 1 - s, num_microbatches)  # (1)!
        order = [("F", m) for m in range(warmup)]
        for m in range(warmup, num_microbatches):
            order += [("F", m), ("B", m - warmup)]
        order += [("B", m) for m in range(num_microbatches - warmup, num_microbatches)]
        orders.append(order)
    done, table, step = {}, {}, 0
    while any(orders):
        now = []
        for s, order in enumerate(orders):
            if not order:
                continue
            op, m = order[0]
            if op == "F":
                needs = ("F", m, s - 1) if s > 0 else None
            elif s < num_stages - 1:
                needs = ("B", m, s + 1)
            else:
                needs = ("F", m, s)
            if needs is None or done.get(needs, step) < step:  # (2)!
                now.append((s, order.pop(0)))
        for s, (op, m) in now:
            table[step, s] = (op, m)
            done[op, m, s] = step
        step += 1
    return table


# --8<-- [end:solution]


def main() -> None:
    table = one_f_one_b(4, 8)
    for s in range(4):
        print(
            " ".join(
                f"{table[t, s][0]}{table[t, s][1]}" if (t, s) in table else " ·"
                for t in range(22)
            )
        )


if __name__ == "__main__":
    main()
