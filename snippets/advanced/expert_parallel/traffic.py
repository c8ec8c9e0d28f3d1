"""What crosses the network: the bytes of one all_to_all, by formula and in the program.

Run `python -m snippets.advanced.expert_parallel.traffic` to print what the page shows.
"""

# --8<-- [start:imports]
from collections import Counter

# --8<-- [end:imports]
# isort: split
import jax

# On the page, these are defined by earlier blocks.
from snippets.advanced.expert_parallel.capacity import capacity
from snippets.hlo import read_collectives


# --8<-- [start:bytes]
def all_to_all_bytes(experts, capacity, d_model, devices, itemsize=4):
    """Bytes one device sends in one all_to_all of its (experts, capacity, d_model)
    buffer: every piece but its own, (devices - 1) / devices of the buffer."""
    if devices < 1 or experts % devices:
        raise ValueError(
            f"{experts} experts do not split over {devices} devices: the number of "
            f"experts must be a multiple of the number of devices."
        )
    if min(capacity, d_model, itemsize) < 1:
        raise ValueError(
            f"capacity, d_model and itemsize must be at least 1, not {capacity}, "
            f"{d_model} and {itemsize}."
        )
    buffer = experts * capacity * d_model * itemsize
    return buffer * (devices - 1) // devices


# --8<-- [end:bytes]


def byte_table(x: jax.Array) -> dict[float, int]:
    # --8<-- [start:byte-table]
    sent = {}
    for factor in (1.0, 2.0):
        size = capacity(len(x) // 8, 8, factor)
        sent[factor] = all_to_all_bytes(8, size, d_model=16, devices=8)
        print(
            f"factor {factor}: buffer (8, {size}, 16), {8 * size * 16 * 4} bytes; "
            f"each all_to_all sends {sent[factor]} of them"
        )
    # --8<-- [end:byte-table]
    return sent


def program_shapes(compiled) -> list:
    # --8<-- [start:program-shapes]
    for c in read_collectives(compiled):
        pieces = Counter(c.result.strip("()").split(", "))  # the arrays of its result
        shapes = ", ".join(f"{n} x {shape}" for shape, n in pieces.items())
        print(
            f"{c.kind}: {shapes}; sends {c.wire_bytes:,.0f} of {c.result_bytes:,} bytes"
        )
    # --8<-- [end:program-shapes]
    return read_collectives(compiled)


def main() -> None:
    from snippets.advanced.expert_parallel import dispatch, layer

    mesh = layer.expert_mesh()
    params, _, x = layer.build(mesh)
    byte_table(x)
    program_shapes(dispatch.compiled_layer(x, params, mesh))


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
