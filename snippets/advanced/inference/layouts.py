"""The KV cache and the decode step on 8 devices: split by batch or by heads.

Run `python -m snippets.advanced.inference.layouts` to print what the page shows.
"""

# --8<-- [start:imports]
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import P
from jax.sharding import AxisType, Mesh, NamedSharding
from rich.console import Console
from rich.table import Table

# --8<-- [end:imports]
# isort: split
# On the page, these are defined by earlier blocks.
from snippets.advanced.inference.decode import (
    HEAD_DIM,
    HEADS,
    MAX_LEN,
    decode_step,
    empty_cache,
    generate,
    prefill,
    weight_shapes,
)
from snippets.hlo import read_collectives


def make_mesh() -> Mesh:
    # --8<-- [start:mesh]
    mesh = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Auto,))
    print(mesh)
    # --8<-- [end:mesh]
    return mesh


# --8<-- [start:layouts]
LAYOUTS = {
    "batch": {  # each device: whole sequences, 1/8 of them, and every weight
        "cache": P("x"),  # (batch, heads, MAX_LEN, head_dim)
        "tokens": P("x"),  # prompt (batch, T), token (batch,), logits (batch, VOCAB)
        "weights": {},  # every weight whole on every device
    },
    "heads": {  # each device: 1/8 of the heads of every sequence
        "cache": P(None, "x"),
        "tokens": P(),
        "weights": {
            "wq": P(None, "x"),  # (D_MODEL, heads, head_dim): a head's columns
            "wk": P(None, "x"),
            "wv": P(None, "x"),
            "wo": P("x"),  # (heads, head_dim, D_MODEL): a head's rows
        },
    },
}
# --8<-- [end:layouts]


# --8<-- [start:sharded]
def sharded(mesh: Mesh, layout: str, batch: int, heads: int = HEADS):
    """prefill and decode_step jitted for a layout, and the step's arguments as
    shapes that carry their shardings: (weights, cache, token, position)."""
    if layout not in LAYOUTS:
        raise ValueError(f"Unknown layout {layout!r}: choose one of {list(LAYOUTS)}.")
    if "x" not in mesh.axis_names:
        raise ValueError(f"The layouts split over a mesh axis 'x'; {mesh} has none.")
    devices, size = mesh.shape["x"], {"batch": batch, "heads": heads}[layout]
    if size % devices:  # (1)!
        raise ValueError(
            f"The {layout} layout splits {layout} ({size}) over the {devices} devices "
            f"of axis 'x', and {size} is not a multiple of {devices}. Use the other "
            f"layout, or a mesh whose 'x' axis divides {size}."
        )
    specs = LAYOUTS[layout]

    def shaped(shape, spec, dtype=jnp.float32):
        return jax.ShapeDtypeStruct(shape, dtype, sharding=NamedSharding(mesh, spec))

    kv = (batch, heads, MAX_LEN, HEAD_DIM)
    args = (
        {
            n: shaped(s, specs["weights"].get(n, P()))
            for n, s in weight_shapes(heads).items()
        },
        {"k": shaped(kv, specs["cache"]), "v": shaped(kv, specs["cache"])},
        shaped((batch,), specs["tokens"], jnp.int32),  # also the prompt's sharding
        shaped((), P(), jnp.int32),  # the position, on every device
    )
    on = jax.tree.map(lambda a: a.sharding, args)  # (2)!
    out = (on[2], on[2], on[1])  # next token, its logits, the cache
    first = jax.jit(prefill, in_shardings=on[:3], out_shardings=out, donate_argnums=1)
    step = jax.jit(decode_step, in_shardings=on, out_shardings=out, donate_argnums=1)
    return first, step, args


# --8<-- [end:sharded]


# --8<-- [start:measure]
def bytes_per_device(tree) -> int:
    """What one device holds of the arrays (or ShapeDtypeStructs) in tree."""
    return sum(
        math.prod(a.sharding.shard_shape(a.shape)) * a.dtype.itemsize
        for a in jax.tree.leaves(tree)
    )


def collective_results(compiled) -> list[str]:
    """Each collective of a compiled program, with its result on one device."""
    return [f"{c.kind} {c.result}" for c in read_collectives(compiled)]


def compare(mesh: Mesh, rows: list[tuple[str, int]], prompt_length: int = 8):
    """Compile prefill and decode_step from shapes alone, for each (layout, batch)."""
    table = Table("per device", title="Compiled for the CPU backend")
    found, cells = {}, {}
    for layout, batch in rows:
        first, step, args = sharded(mesh, layout, batch)
        weights, cache, token, _ = args
        prompt = jax.ShapeDtypeStruct(
            (batch, prompt_length), jnp.int32, sharding=token.sharding
        )
        first = first.lower(weights, cache, prompt).compile()  # (1)!
        step = step.lower(*args).compile()
        found[layout] = args, first, step
        table.add_column(f"by {layout}, batch {batch}")
        column = {
            "cache spec": cache["k"].sharding.spec,
            "cache shard": cache["k"].sharding.shard_shape(cache["k"].shape),
            "cache bytes (k, v)": f"{bytes_per_device(cache):,}",
            "weight bytes": f"{bytes_per_device(weights):,}",
            "prefill": "\n".join(collective_results(first)) or "none",
            "decode step": "\n".join(collective_results(step)) or "none",
            "aliased bytes": f"{step.memory_analysis().alias_size_in_bytes:,}",
        }
        for name, value in column.items():
            cells.setdefault(name, []).append(str(value))
    for name, values in cells.items():
        table.add_row(name, *values)
    Console(width=80).print(table)
    return found


# --8<-- [end:measure]


def compare_batch_8(mesh: Mesh):
    # --8<-- [start:compare]
    found = compare(mesh, [("batch", 8), ("heads", 8)])
    # --8<-- [end:compare]
    return found


# --8<-- [start:generate-on-mesh]
def generate_on_mesh(args: tuple, first, step, weights: dict, prompt, new_tokens=8):
    """Place the weights, an empty cache and the prompt as args say; generate."""
    on = jax.tree.map(lambda a: a.sharding, args)
    weights = jax.device_put(weights, on[0])
    cache = jax.device_put(empty_cache(prompt.shape[0]), on[1])
    prompt = jax.device_put(prompt, on[2])
    return generate(first, step, weights, cache, prompt, new_tokens)


# --8<-- [end:generate-on-mesh]


def generate_sharded(found: dict, weights: dict, prompt, tokens, logits):
    # --8<-- [start:generate-sharded]
    for layout, (args, first, step) in found.items():
        got, got_logits = generate_on_mesh(args, first, step, weights, prompt)  # (1)!
        print(
            f"{layout}: same tokens as one device: {(got == tokens).all()}, "
            f"logits within {1e-4:g}: {np.abs(got_logits - logits).max() <= 1e-4}"
        )
    # --8<-- [end:generate-sharded]
    return got, got_logits


def small_batch(mesh: Mesh, weights: dict, prompt, tokens):
    # --8<-- [start:small-batch]
    try:
        sharded(mesh, "batch", batch=2)
    except ValueError as err:
        print(f"ValueError: {err}")
    small = compare(mesh, [("heads", 2)])
    got, _ = generate_on_mesh(*small["heads"], weights, prompt[:2])
    print("same tokens as rows 0 and 1 of the batch of 8:", (got == tokens[:2]).all())
    # --8<-- [end:small-batch]
    return small, got


def main() -> None:
    from snippets.advanced.inference.decode import (
        generate_on_one_device,
        make_prompt,
    )

    weights, prompt = make_prompt()
    _, _, tokens, logits = generate_on_one_device(weights, prompt)
    mesh = make_mesh()
    found = compare_batch_8(mesh)
    generate_sharded(found, weights, prompt, tokens, logits)
    small_batch(mesh, weights, prompt, tokens)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
