"""What one decode step reads from memory and computes: why decode is memory-bound.

Run `python -m snippets.advanced.inference.traffic` to print what the page shows.
"""

# --8<-- [start:imports]
import math

# --8<-- [end:imports]
# isort: split
# On the page, these are defined by earlier blocks.
from snippets.advanced.inference.decode import HEAD_DIM, HEADS, MAX_LEN
from snippets.advanced.inference.grouped import ATTENTION, gqa_shapes

# --8<-- [start:traffic]
MATMULS = ("wq", "wk", "wv", "wo", "unembed")  # the embeddings are only indexed


def decode_traffic(batch: int, kv_heads: int, itemsize: int = 4) -> dict[str, int]:
    """One decode step of the page's layer for `batch` sequences, with itemsize-byte
    weights and cache: the bytes it reads and the floating-point operations it does."""
    if batch < 1 or itemsize not in (2, 4):
        raise ValueError(
            f"Need batch >= 1 ({batch}) and itemsize 2 (bfloat16) or 4 (float32), "
            f"not {itemsize}."
        )
    shapes = gqa_shapes(kv_heads)
    weights = sum(math.prod(shapes[n]) for n in MATMULS)  # (1)!
    slots = kv_heads * MAX_LEN * HEAD_DIM  # one sequence's keys (or values)
    return {
        "weight bytes": itemsize * weights,  # read once per step, whatever the batch
        "cache bytes": itemsize * 2 * slots * batch,  # keys and values, every slot
        "flops": 2 * batch * (weights + 2 * HEADS * MAX_LEN * HEAD_DIM),  # (2)!
    }


def intensity(traffic: dict[str, int]) -> float:
    """FLOPs per byte read: what a chip's peak FLOP/s over its HBM bytes/s is met by."""
    return traffic["flops"] / (traffic["weight bytes"] + traffic["cache bytes"])


# --8<-- [end:traffic]


def show_traffic() -> dict:
    # --8<-- [start:per-step]
    rows = {}
    print(f"{'attention':<15}{'batch':>6}{'weights':>10}{'cache':>10}{'FLOP/B':>8}")
    for name in ("multi-head", "multi-query"):
        for batch in (1, 8, 64, 512):
            step = decode_traffic(batch, ATTENTION[name], itemsize=2)  # bfloat16
            rows[name, batch] = step
            print(
                f"{name:<15}{batch:>6}{step['weight bytes']:>10,}"
                f"{step['cache bytes']:>10,}{intensity(step):>8.1f}"
            )
    # --8<-- [end:per-step]
    return rows


def main() -> None:
    show_traffic()


if __name__ == "__main__":
    main()
