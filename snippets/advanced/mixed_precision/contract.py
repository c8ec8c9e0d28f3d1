"""What each value of the transformer page's step is stored and sent in, and what
`jax.default_matmul_precision` changes in its compiled program.

Run `python -m snippets.advanced.mixed_precision.contract` to print what the page shows.
"""

# --8<-- [start:imports]
import collections
import re

# --8<-- [end:imports]
import jax
from flax import nnx
from jax.sharding import Mesh

# The page shows these by including the sections of the transformer page's modules.
from snippets.advanced.transformer.init import Sharded, build_mesh, sharded_init
from snippets.advanced.transformer.model import Config
from snippets.advanced.transformer.step import gradients, make_train_step

# --8<-- [start:hlo-dtypes]
# One HLO instruction: %name = shape op(operands), attributes
HLO_LINE = re.compile(r"\s*(ROOT )?%(\S+) = (\(.*?\)|\S+) ([\w-]+)\(([^)]*)\)(.*)")
MOVES = (
    "all-gather",
    "all-reduce",
    "reduce-scatter",
    "all-to-all",
    "collective-permute",
)


def dtypes_in(shape: str) -> list[str]:
    """The element types of an HLO shape: `(f32[2], bf16[8]{0})` -> ['f32', 'bf16']."""
    return re.findall(r"([a-z]\w*)\[", shape)


def matmuls(compiled) -> collections.Counter:
    """The compiled program's products, counted by operand and result dtypes and by the
    precision each asks of its operands."""
    shapes, found = {}, collections.Counter()
    for line in compiled.as_text().splitlines():
        if (instruction := HLO_LINE.match(line)) is None:
            continue
        _, name, shape, op, operands, attrs = instruction.groups()
        shapes[name] = shape  # names are unique in a module; operands come first
        if op == "dot":
            lhs, rhs = (
                dtypes_in(shapes[o])[0] for o in re.findall(r"%([\w.-]+)", operands)
            )
            asked = re.search(
                r"operand_precision=\{(\w+)|algorithm=(\w+)", attrs
            )  # (1)!
            kind = f"{lhs} x {rhs} -> {dtypes_in(shape)[0]}"
            found[kind, asked[1] or asked[2] if asked else "default"] += 1
    return found


def collectives_in(compiled) -> list[tuple[str, str]]:
    """Each collective of a compiled program: its kind and its result's shape."""
    found = []
    for line in compiled.as_text().splitlines():
        instruction = HLO_LINE.match(line)
        kind = instruction and instruction[4].removesuffix("-start")
        if kind in MOVES:
            found.append((kind, instruction[3]))
    return found


def sent_in(compiled) -> dict[str, list[str]]:
    """The dtypes each kind of collective of a compiled program carries."""
    found = collections.defaultdict(set)
    for kind, shape in collectives_in(compiled):
        found[kind].update(dtypes_in(shape))
    return {kind: sorted(found[kind]) for kind in sorted(found)}


# --8<-- [end:hlo-dtypes]


def make_state():
    # --8<-- [start:state]
    mesh = build_mesh()
    cfg = Config()
    sharded = sharded_init(cfg, mesh)
    state = sharded.init()
    # --8<-- [end:state]
    return mesh, cfg, sharded, state


def stored_and_sent(sharded: Sharded, mesh: Mesh, state, batches, compiled):
    # --8<-- [start:stored-and-sent]
    state, _ = compiled(state, batches[0])  # (1)!

    @jax.jit
    def loss_and_grads(state, tokens):
        with jax.sharding.use_abstract_mesh(mesh.abstract_mesh):
            return gradients(nnx.merge(sharded.graphdef, state).model, tokens)

    loss_now, grads_now = loss_and_grads(state, batches[1])
    adam = state["optimizer"]["opt_state"][0]

    def kinds(tree):
        return "/".join(sorted({str(a.dtype) for a in jax.tree.leaves(tree)}))

    dtype_rows = [
        ("parameters", kinds(state["model"])),
        ("gradients", kinds(grads_now)),
        ("Adam's mu and nu", kinds((adam["mu"], adam["nu"]))),
        ("loss", str(loss_now.dtype)),
    ]
    for (product, _how), n in sorted(matmuls(compiled).items()):
        dtype_rows.append((f"{n} matmuls", product))  # (2)!
    for kind, sent in sent_in(compiled).items():
        dtype_rows.append((f"each {kind}", "/".join(sent)))
    print(f"{'value':<18}dtype (arrays; then the {jax.default_backend()} program)")
    for value, dtype in dtype_rows:
        print(f"{value:<18}{dtype}")
    # --8<-- [end:stored-and-sent]
    return dtype_rows, state, (loss_now, grads_now)


def matmul_precision(sharded: Sharded, mesh: Mesh, tokens_spec, compiled):
    # --8<-- [start:matmul-precision]
    with jax.default_matmul_precision("float32"):
        precise = make_train_step(sharded, mesh).lower(sharded.abstract, tokens_spec)
        precise = precise.compile()
    print(f"{jax.default_backend()} program   matmuls (operands -> result, precision)")
    for setting, step_program in {"default": compiled, "float32": precise}.items():
        for (operands, asked), times in sorted(matmuls(step_program).items()):
            print(f"{setting:<8}{times:>4}  {operands}, {asked}")
    same = collectives_in(compiled) == collectives_in(precise)
    print("the same collectives, each in the same dtype:", same)
    # --8<-- [end:matmul-precision]
    return precise


def main() -> None:
    from snippets.advanced.transformer.step import compile_step

    mesh, cfg, sharded, state = make_state()
    batches, tokens_spec, compiled = compile_step(cfg, sharded, mesh)
    stored_and_sent(sharded, mesh, state, batches, compiled)
    matmul_precision(sharded, mesh, tokens_spec, compiled)


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
