"""The three results and their compiled collectives in one table.

Run `python -m snippets.concepts.three_approaches.side_by_side` to print what the page shows.
"""

# --8<-- [start:imports]
import jax
import numpy as np

# --8<-- [end:imports]
# On the page, an earlier block defines count_collectives and read_collectives.
from snippets.hlo import count_collectives, read_collectives


def side_by_side(
    auto_out: jax.Array,
    auto_compiled,
    explicit_out: jax.Array,
    explicit_compiled,
    manual_out: jax.Array,
    manual_compiled,
    reference: np.ndarray,
) -> dict:
    # --8<-- [start:side-by-side]
    results = {
        "automatic": (auto_out, auto_compiled),
        "explicit": (explicit_out, explicit_compiled),
        "manual": (manual_out, manual_compiled),
    }
    row = "{:<11}{:<19}{:<13}{:<12}{}".format
    cols = ("approach", "collectives", "all-reduced", "replicated", "matches NumPy")
    print(row(*cols))
    for name, (out, compiled) in results.items():
        found = count_collectives(compiled)
        summed = ", ".join(
            c.result for c in read_collectives(compiled) if c.kind == "all-reduce"
        )
        replicated = out.sharding.is_fully_replicated
        matches = np.allclose(out, reference, rtol=1e-6)
        print(row(name, str(found), summed, str(replicated), str(matches)))
    same = all(np.array_equal(out, auto_out) for out, _ in results.values())
    print("all three bit for bit equal:", same)
    # --8<-- [end:side-by-side]
    return {name: count_collectives(c) for name, (_, c) in results.items()}


def main() -> None:
    from snippets.concepts.three_approaches import automatic, explicit, layer, manual

    x, W, b, reference = layer.make_data()
    _, x_auto, W_auto, b_auto = automatic.place_on_auto_mesh(x, W, b)
    auto_out, auto_compiled = automatic.run_automatic(x_auto, W_auto, b_auto, reference)
    explicit_mesh, x_exp, W_exp, b_exp = explicit.place_on_explicit_mesh(x, W, b)
    explicit_out, explicit_compiled = explicit.run_explicit(
        explicit_mesh, x_exp, W_exp, b_exp, reference
    )
    manual_out, manual_compiled = manual.run_manual(
        explicit_mesh, x_exp, W_exp, b_exp, reference
    )
    side_by_side(
        auto_out,
        auto_compiled,
        explicit_out,
        explicit_compiled,
        manual_out,
        manual_compiled,
        reference,
    )


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
