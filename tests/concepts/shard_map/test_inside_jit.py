import jax
import numpy as np
import pytest
from jax import P
from jax.sharding import AxisType, NamedSharding

from snippets.concepts.shard_map import inside_jit, local_view, partial_sums
from snippets.hlo import count_collectives


def test_psum_is_the_one_all_reduce_of_the_compiled_program(line_mesh, capsys):
    _, x = local_view.build_data()
    global_sum, _ = partial_sums.total(line_mesh, x)
    capsys.readouterr()
    mean, double = inside_jit.compiled_collectives(line_mesh, x, global_sum)
    assert count_collectives(mean) == {"all-reduce": 1}
    assert count_collectives(double) == {}
    np.testing.assert_allclose(mean(x), np.mean(np.arange(16.0)))
    np.testing.assert_array_equal(double(x), np.arange(16.0) * 2)
    assert capsys.readouterr().out.splitlines() == [
        "mean(x) = 7.5",
        "-- mean: psum in the body",
        "all-reduce          1",
        "-- jax.jit(double): no collective in the body",
        "collectives: none",
    ]


def test_set_mesh_lets_shard_map_leave_out_the_mesh(line_mesh):
    # The page's tip: under jax.set_mesh, mesh= can be omitted.
    import jax
    from jax import P
    from jax.sharding import NamedSharding

    x = jax.device_put(np.arange(16.0), NamedSharding(line_mesh, P("x")))
    with jax.set_mesh(line_mesh):
        total = jax.shard_map(
            lambda b: jax.lax.psum(b.sum(), "x"), in_specs=P("x"), out_specs=P()
        )(x)
    assert float(total) == 120.0


def test_the_boundary_of_a_shard_map_on_an_auto_mesh_can_add_a_collective(capsys):
    # The body only doubles; the all-gather comes from moving x to in_specs=P().
    auto = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Auto,))
    compiled = inside_jit.boundary_collectives(auto)
    assert count_collectives(compiled) == {"all-gather": 1}
    assert capsys.readouterr().out.splitlines() == [
        "-- in_specs=P(), x split over the Auto axis x",
        "all-gather          1",
    ]
    # The same call on an Explicit mesh is refused instead of moved.
    explicit = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Explicit,))
    split = jax.device_put(np.arange(16.0), NamedSharding(explicit, P("x")))
    whole_block = jax.shard_map(
        lambda b: b * 2, mesh=explicit, in_specs=P(), out_specs=P()
    )
    with pytest.raises(ValueError, match="does not match the specs of the input"):
        jax.jit(whole_block)(split)


def test_the_pointer_to_partial_manual_shard_map_holds():
    """The page says a body manual over `data` only still gets a collective from the
    partitioner, and links to where Manual control compiles one: the link's section
    exists, and its program has one all-reduce of each origin."""
    import re
    from pathlib import Path

    import markdown

    from snippets.advanced.manual_control import partial_manual

    docs = Path(__file__).resolve().parents[3] / "docs"
    said = (docs / "concepts" / "shard-map.md").read_text()
    link = re.search(r"\(\.\./advanced/manual-control\.md#([\w-]+)\)", said)
    assert link and 'axis_names={"data"}' in said
    md = markdown.Markdown(extensions=["toc"])
    md.convert((docs / "advanced" / "manual-control.md").read_text())
    ids = set()
    stack = list(md.toc_tokens)
    while stack:
        token = stack.pop()
        ids.add(token["id"])
        stack.extend(token["children"])
    assert link[1] in ids
    mesh, x, w = partial_manual.build_data()
    step, _, _ = partial_manual.run_partial(mesh, x, w)
    found = partial_manual.compiled_axes(step, mesh, x, w)
    assert sorted((kind, who) for kind, _, _, who in found) == [
        ("all-reduce", "partitioner"),
        ("all-reduce", "your code"),
    ]
