import jax
import jax.numpy as jnp
import pytest
from jax import P

from snippets.concepts.shard_map import collective_types

VARYING, INVARIANT = "float32[1,8]{V:x}", "float32[1,8]"


@pytest.fixture(scope="module")
def rows(line_mesh):
    return collective_types.collective_types(line_mesh, jnp.array([1.0, 10.0]))


def test_what_each_collective_does_to_the_type_and_what_its_gradient_runs(rows):
    assert rows == {
        "psum(b)": (VARYING, INVARIANT, "nothing"),
        "pmean(b)": (VARYING, INVARIANT, "nothing"),
        "pmax(b)": (VARYING, INVARIANT, "no gradient rule"),
        "all_gather(b)": (VARYING, "float32[8,8]{V:x}", "reduce_scatter"),
        'all_gather(b, to="invarying")': (VARYING, "float32[8,8]", "nothing"),
        "psum_scatter(b)": (VARYING, "float32[1,1]{V:x}", "all_gather"),
        "all_to_all(b)": (VARYING, "float32[8,1]{V:x}", "all_to_all"),
        "ppermute(b), one step on": (VARYING, VARYING, "ppermute"),
        'pcast(w, to="varying")': ("float32[2]", "float32[2]{V:x}", "psum_invariant"),
    }


def test_only_the_invariant_results_may_leave_with_out_specs_p(line_mesh, rows):
    """The type decides out_specs: the rows without V pass with P(), the others do not."""
    square = jnp.arange(64.0).reshape(8, 8)
    square = jax.device_put(square, jax.sharding.NamedSharding(line_mesh, P("x")))
    for name, (_, out, _) in rows.items():
        if name.startswith("pcast"):
            continue
        leave = jax.shard_map(
            collective_types.VMA_EXAMPLES[name],
            mesh=line_mesh,
            in_specs=P("x"),
            out_specs=P(),
        )
        if "{V:x}" in out:
            with pytest.raises(ValueError, match="require replication"):
                jax.jit(leave)(square)
        else:
            jax.jit(leave)(square)


def test_ppermutes_gradient_sends_the_other_way(line_mesh):
    def body(b):
        out, pullback = jax.vjp(collective_types.shift, b)
        (eqn,) = [
            e
            for e in jax.make_jaxpr(pullback)(out).jaxpr.eqns
            if e.primitive.name == "ppermute"
        ]
        pairs.extend(eqn.params["perm"])
        return b

    pairs = []
    square = jnp.zeros((8, 8))
    square = jax.device_put(square, jax.sharding.NamedSharding(line_mesh, P("x")))
    jax.shard_map(body, mesh=line_mesh, in_specs=P("x"), out_specs=P("x"))(square)
    assert sorted(pairs) == sorted(((i + 1) % 8, i) for i in range(8))
