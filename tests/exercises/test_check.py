"""The grader itself: what it says about files it cannot grade, and its command line."""

import textwrap

import pytest

from snippets.exercises import check
from snippets.exercises.registry import EXERCISES

DOUBLE = """
    import jax
    import jax.numpy as jnp
    from jax import P
    from jax.sharding import AxisType


    def shard_map_double(x):
        mesh = jax.make_mesh((8,), ("data",), axis_types=(AxisType.Auto,))
        return jax.shard_map(
            lambda y: y * 2.0, mesh=mesh, in_specs=P("data"), out_specs=P("data")
        )(x)
"""


def no_grader_traceback(out: str) -> None:
    assert "Traceback" not in out
    assert "snippets/exercises" not in out


def test_a_correct_file_passes_with_the_number_of_cases(grade):
    status, out, _ = grade("shard_map_double", DOUBLE)
    assert status == 0
    assert out.splitlines()[-1] == (
        "PASSED: shard_map_double is right on all 2 hidden cases."
    )
    assert "  ok      program (uses shard_map)" in out


def test_a_syntax_error_names_the_file_the_line_and_shows_it(grade):
    status, out, path = grade(
        "shard_map_double",
        """
        import jax


        def shard_map_double(x):
            return x *
        """,
    )
    assert status == 1
    lines = out.splitlines()
    assert lines[0] == f"{path}, line 5: SyntaxError: invalid syntax"
    assert lines[1] == "    return x *"
    assert lines[2].endswith("^")
    no_grader_traceback(out)


def test_an_indentation_error_is_a_syntax_error_too(grade):
    status, out, path = grade(
        "shard_map_double", "def shard_map_double(x):\nreturn x\n"
    )
    assert status == 1
    assert out.startswith(
        f"{path}, line 2: IndentationError: expected an indented block"
    )


def test_a_missing_function_is_named_with_what_the_file_defines(grade):
    status, out, path = grade(
        "place_batch",
        """
        def place(x, mesh):
            return x


        def helper():
            pass
        """,
    )
    assert status == 1
    assert out == (
        f"{path} has no function place_batch. It defines: place, helper.\n"
        "Define place_batch(x, mesh), as in "
        "snippets/exercises/place_batch/starter.py.\n"
    )


def test_a_file_that_defines_nothing(grade):
    status, out, _ = grade("tp_specs", "SPECS = {}\n")
    assert status == 1
    assert "has no function tp_specs. It defines no functions." in out


def test_a_wrong_signature_shows_expected_and_got(grade):
    status, out, _ = grade(
        "place_batch",
        """
        def place_batch(x, mesh, axis, *, check=True):
            return x
        """,
    )
    assert status == 1
    assert out.splitlines() == [
        "place_batch takes the wrong arguments.",
        "  expected: place_batch(x, mesh)",
        "  got:      place_batch(x, mesh, axis, check=...)",
        "The grader calls it with 2 positional argument(s), in that order.",
    ]


def test_extra_optional_parameters_are_fine(grade):
    status, out, _ = grade(
        "gpipe_schedule",
        """
        import numpy as np


        def gpipe_schedule(num_stages, num_microbatches, fill=-1):
            counts = (num_stages, num_microbatches)
            if not all(isinstance(n, int) and n >= 1 for n in counts):
                raise ValueError("both must be whole numbers >= 1")
            steps = np.arange(num_microbatches + num_stages - 1)
            m = steps[None, :] - np.arange(num_stages)[:, None]
            return np.where((m >= 0) & (m < num_microbatches), m, fill)
        """,
    )
    assert status == 0, out


def test_an_exception_shows_the_readers_traceback_only(grade):
    status, out, path = grade(
        "per_device_bytes",
        """
        def helper(shape):
            return shape[0] // 0


        def per_device_bytes(shape, dtype, spec, mesh):
            return helper(shape)
        """,
    )
    assert status == 1
    lines = out.splitlines()
    start = lines.index(
        "  FAILED  case 1 of 6 (float32[64, 32] as P('data', None) on a mesh {'data':"
    )
    assert lines[start:] == [
        "  FAILED  case 1 of 6 (float32[64, 32] as P('data', None) on a mesh {'data':",
        "          2, 'model': 4})",
        "    - your code raised an exception:",
        f'        File "{path}", line 6, in per_device_bytes',
        "          return helper(shape)",
        f'        File "{path}", line 2, in helper',
        "          return shape[0] // 0",
        "        ZeroDivisionError: integer division or modulo by zero",
        "  ...     5 more case(s) not run: fix this one first.",
        "",
        "NOT YET: 0 of 6 cases passed. Fix per_device_bytes and run the check again.",
    ]
    no_grader_traceback(out)


def test_an_error_while_loading_the_file(grade):
    status, out, path = grade(
        "gpipe_schedule",
        """
        import numpy as np

        TABLE = np.zeros(3)[7]


        def gpipe_schedule(num_stages, num_microbatches):
            return TABLE
        """,
    )
    assert status == 1
    assert out.splitlines() == [
        f"{path} raised an exception while it was being loaded:",
        f'  File "{path}", line 3, in <module>',
        "    TABLE = np.zeros(3)[7]",
        "  IndexError: index 7 is out of bounds for axis 0 with size 3",
    ]


def test_an_unknown_exercise_lists_the_known_ones(grade):
    status, out, _ = grade("shard_map_tripple", DOUBLE)
    assert status == 2
    lines = out.splitlines()
    assert (
        lines[0]
        == "There is no exercise called 'shard_map_tripple'. The exercises are:"
    )
    listed = [line.split()[0] for line in lines[1:-1]]
    assert listed == list(EXERCISES)
    assert lines[-1] == check.USAGE


def test_a_missing_file(tmp_path, capsys):
    assert check.main(["place_batch", str(tmp_path / "nope.py")]) == 2
    out = capsys.readouterr().out
    assert out.startswith(f"There is no file {tmp_path / 'nope.py'}")


@pytest.mark.parametrize("argv", [[], ["place_batch"], ["a", "b", "c"]])
def test_usage_errors(argv, capsys):
    assert check.main(argv) == 2
    assert capsys.readouterr().out.startswith(check.USAGE)


def test_list_and_help(capsys):
    assert check.main(["--list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in listed] == list(EXERCISES)
    assert check.main(["--help"]) == 0
    assert "python -m snippets.exercises.check <exercise> <file.py>" in (
        capsys.readouterr().out
    )


def test_a_function_that_cannot_be_traced_is_checked_by_running_it(grade):
    """It reads `.sharding` off its input, which a traced array lacks: inside the grader's
    trace it is the sharding of the array's type, so its program is still read whole."""
    status, out, _ = grade(
        "shard_map_double",
        DOUBLE.replace(
            "        return jax.shard_map(",
            "        if x.sharding is None:  # untraceable: a tracer has no .sharding\n"
            "            raise ValueError('x must be placed')\n"
            "        return jax.shard_map(",
        ),
    )
    assert status == 0, out


def test_the_setup_lines_of_the_pages_may_stay_in_the_file(grade):
    setup = (
        "import jax\n\n"
        'jax.config.update("jax_platforms", "cpu")\n'
        'jax.config.update("jax_num_cpu_devices", 8)\n'
    )
    status, out, _ = grade("shard_map_double", setup + textwrap.dedent(DOUBLE))
    assert status == 0, out


def test_asking_for_another_device_count_gets_a_hint(grade):
    status, out, path = grade(
        "gpipe_schedule",
        """
        import jax

        jax.config.update("jax_num_cpu_devices", 1)


        def gpipe_schedule(num_stages, num_microbatches):
            return None
        """,
    )
    assert status == 1
    lines = out.splitlines()
    assert lines[:3] == [
        f"{path} raised an exception while it was being loaded:",
        f'  File "{path}", line 3, in <module>',
        '    jax.config.update("jax_num_cpu_devices", 1)',
    ]
    assert lines[3].startswith(
        "  RuntimeError: jax_num_cpu_devices config should be updated before backends "
        "are initialized"
    )
    assert lines[-1] == (
        "Hint: the grader gives JAX 8 CPU devices before it loads your file, so the "
        "file cannot ask for another number: remove its jax.config.update lines (or "
        "ask for 8)."
    )


def test_a_shard_map_exercise_must_trace_it_does_not_fall_back(grade):
    """What cannot be traced cannot show its shard_map: the check says so, and what to do."""
    status, out, path = grade(
        "shard_map_double",
        DOUBLE.replace(
            "        return jax.shard_map(",
            "        assert len(x.addressable_shards) >= 1  # a concrete array's only\n"
            "        return jax.shard_map(",
        ),
    )
    assert status == 1
    flat = " ".join(out.split())
    assert (
        "FAILED program (uses shard_map) - the grader could not trace it with "
        "jax.make_jaxpr, so it cannot check that a shard_map does the work: it needs "
        "the value of a traced array on the host"
    ) in flat
    assert "Keep the work in JAX: jax.numpy and jax.shard_map" in flat
    assert f'File "{path}", line 9, in shard_map_double' in out
    no_grader_traceback(out)


def test_a_vmap_inside_a_jit_that_the_cases_compiled_still_counts(grade):
    """The cases call the function first; a jit traced then is traced again for the
    program check, so that its vmap is seen."""
    status, out, _ = grade(
        "shard_map_vs_vmap",
        """
        import jax
        import jax.numpy as jnp
        from jax import P
        from jax.sharding import AxisType

        per_row = jax.jit(jax.vmap(lambda row: row @ row))


        def shard_map_vs_vmap(x):
            k = max(d for d in range(1, 9) if x.shape[0] % d == 0)
            mesh = jax.make_mesh(
                (k,), ("b",), axis_types=(AxisType.Auto,), devices=jax.devices()[:k]
            )
            split = jax.shard_map(per_row, mesh=mesh, in_specs=P("b"), out_specs=P("b"))
            return jnp.stack([per_row(x), split(x)])
        """,
    )
    assert status == 0, out
    assert "  ok      program (uses shard_map, uses vmap)" in out


@pytest.mark.parametrize(
    ("exercise", "source"),
    [
        pytest.param(
            "shard_map_double",
            """
            import jax
            import numpy as np
            from jax import P
            from jax.sharding import AxisType, Mesh, NamedSharding


            def shard_map_double(x):
                mesh = Mesh(np.array(jax.devices()[:2]), ("data",),
                            axis_types=(AxisType.Explicit,))
                placed = jax.device_put(x, NamedSharding(mesh, P("data")))
                double = jax.jit(jax.shard_map(
                    lambda y: y * 2.0, mesh=mesh, in_specs=P("data"), out_specs=P("data")
                ))
                return double(placed)
            """,
            id="shard_map_double: two devices, jitted",
        ),
        pytest.param(
            "manual_dense",
            """
            import jax
            import jax.numpy as jnp
            from jax import P


            def manual_dense(x, W, b, mesh):
                def body(xs, Ws, b):
                    z = jax.lax.psum(jnp.einsum("i,io->o", xs, Ws), "x") + b
                    return 1 / (1 + jnp.exp(-z))

                layer = jax.shard_map(
                    body, mesh=mesh, in_specs=(P("x"), P("x", None), P(None)),
                    out_specs=P(None),
                )
                return jax.jit(layer)(x, W, b)
            """,
            id="manual_dense: einsum, sigmoid by hand, P(None) specs",
        ),
        pytest.param(
            "ring_all_gather",
            """
            import jax
            import jax.numpy as jnp
            from jax import P


            def ring_all_gather(x, mesh):
                n = mesh.shape["x"]

                def body(block):
                    me = jax.lax.axis_index("x")
                    copy = jnp.zeros((n, block.size), block.dtype).at[me].set(block)

                    def hop(k, state):
                        held, copy = state
                        held = jax.lax.ppermute(
                            held, "x", [(i, (i + 1) % n) for i in range(n)]
                        )
                        return held, copy.at[(me - k) % n].set(held)

                    _, copy = jax.lax.fori_loop(1, n, hop, (block, copy))
                    return copy.reshape(1, -1)

                return jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(x)
            """,
            id="ring_all_gather: the hops in a fori_loop",
        ),
        pytest.param(
            "column_sums",
            """
            import jax
            from jax import P
            from jax.sharding import NamedSharding


            def column_sums(x, mesh):
                @jax.jit
                def sums(a):
                    return jax.lax.with_sharding_constraint(
                        a.sum(axis=0), NamedSharding(mesh, P())
                    )

                return sums(x)
            """,
            id="column_sums: with_sharding_constraint inside the jit",
        ),
        pytest.param(
            "place_batch",
            """
            import jax
            from jax import P
            from jax.sharding import NamedSharding


            def place_batch(x, mesh):
                n = mesh.shape["data"]
                if x.ndim == 0 or x.shape[0] % n:
                    raise ValueError(f"use a batch size that is a multiple of {n}")
                spec = P("data", *[None] * (x.ndim - 1))
                return jax.device_put(x, NamedSharding(mesh, spec))
            """,
            id="place_batch: a spec with trailing Nones",
        ),
        pytest.param(
            "sharded_linear",
            """
            import jax
            from flax import nnx


            def sharded_linear(d_in, d_out, mesh, seed):
                @nnx.jit
                def create():
                    return nnx.Linear(
                        d_in,
                        d_out,
                        kernel_init=nnx.with_partitioning(
                            nnx.initializers.lecun_normal(), (None, "model")
                        ),
                        bias_init=nnx.with_partitioning(
                            nnx.initializers.zeros_init(), ("model",)
                        ),
                        rngs=nnx.Rngs(seed),
                    )

                with jax.set_mesh(mesh):
                    return create()
            """,
            id="sharded_linear: created under nnx.jit",
        ),
        pytest.param(
            "sharded_linear",
            """
            import jax
            from flax import nnx


            def sharded_linear(d_in, d_out, mesh, seed):
                with jax.set_mesh(mesh):
                    return nnx.Linear(
                        d_in,
                        d_out,
                        kernel_metadata={"out_sharding": (None, "model")},
                        bias_metadata={"out_sharding": ("model",)},
                        rngs=nnx.Rngs(seed),
                    )
            """,
            id="sharded_linear: the annotation given as kernel_metadata",
        ),
        pytest.param(
            "ring_attention",
            """
            import jax
            import jax.numpy as jnp
            from jax import P


            def ring_attention(q, k, v, mesh):
                n = mesh.shape["seq"]
                right = [(i, (i + 1) % n) for i in range(n)]

                def body(q, k, v):
                    b, d = q.shape
                    me = jax.lax.axis_index("seq")
                    queries = me * b + jnp.arange(b)[:, None]

                    def fold(h, kv, top, den, num):
                        keys = (me - h) % n * b + jnp.arange(b)
                        s = (q[:, None, :] * kv[0][None, :, :]).sum(-1) / jnp.sqrt(d)
                        s = jnp.where(keys <= queries, s, -jnp.inf)
                        new = jnp.maximum(top, s.max(axis=1))
                        scale = jnp.exp(top - new)
                        w = jnp.exp(s - new[:, None])
                        return new, den * scale + w.sum(axis=1), num * scale[:, None] + w @ kv[1]

                    def hop(h, state):
                        kv = jax.lax.ppermute(state[0], "seq", right)
                        return (kv, *fold(h, kv, *state[1:]))

                    kv = jnp.stack([k, v])  # a block of k and one of v, sent together
                    empty = jnp.full((b,), -jnp.inf), jnp.zeros((b,)), jnp.zeros((b, d))
                    empty = [jax.lax.pcast(a, "seq", to="varying") for a in empty]
                    state = (kv, *fold(0, kv, *empty))
                    _, _, den, num = jax.lax.fori_loop(1, n, hop, state)
                    return num / den[:, None]

                return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("seq"),
                                             out_specs=P("seq")))(q, k, v)
            """,
            id="ring_attention: k and v stacked, scores by broadcasting, a fori_loop",
        ),
        pytest.param(
            "checkpoint_restore",
            """
            import jax
            from jax import P
            from jax.sharding import NamedSharding
            from orbax.checkpoint import v1 as ocp


            def checkpoint_restore(path, mesh, specs):
                leaves, tree = jax.tree.flatten_with_path(ocp.metadata(path).metadata)
                target = []
                for path_, m in leaves:
                    name = ".".join(str(getattr(k, "key", k)) for k in path_)
                    spec = next(
                        (s for p, s in specs.items() if f".{p}." in f"{name}."), P()
                    )
                    sharding = NamedSharding(mesh, spec)
                    target.append(jax.ShapeDtypeStruct(m.shape, m.dtype, sharding=sharding))
                return ocp.load(path, abstract_state=jax.tree.unflatten(tree, target))
            """,
            id="checkpoint_restore: the target built from the flattened metadata",
        ),
        pytest.param(
            "place_batch",
            """
            import jax
            from jax import P
            from jax.sharding import NamedSharding


            def place_batch(x, mesh):
                n = dict(zip(mesh.axis_names, mesh.devices.shape))["data"]
                if len(x) % n:
                    raise ValueError(f"{len(x)} is not a multiple of {n}")
                return jax.device_put(x, NamedSharding(mesh, P(("data",))))
            """,
            id="place_batch: the axis size read off the device grid, ('data',)",
        ),
    ],
)
def test_right_answers_written_another_way_pass(grade, exercise, source):
    status, out, _ = grade(exercise, source)
    assert status == 0, out


def test_what_a_case_watches_is_put_back_even_when_the_call_raises(grade):
    """sharded_linear's grader records Flax's parameter creations by patching
    Variable.__init__ around the call; an answer that raises leaves it as it was."""
    from flax.nnx import variablelib

    before = variablelib.Variable.__init__
    status, out, _ = grade(
        "sharded_linear",
        """
        def sharded_linear(d_in, d_out, mesh, seed):
            raise RuntimeError("not yet")
        """,
    )
    assert status == 1
    assert "RuntimeError: not yet" in out
    assert variablelib.Variable.__init__ is before
