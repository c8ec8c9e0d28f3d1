"""snippets.hlo: collectives counted in the compiled program, as the concept pages show them."""

import jax
import jax.numpy as jnp
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from snippets.hlo import count_collectives, print_collectives


def auto_mesh():
    return jax.make_mesh((8,), ("x",), axis_types=(AxisType.Auto,))


def test_a_sharded_contraction_needs_one_all_reduce():
    mesh = auto_mesh()
    a = jax.device_put(jnp.ones((8, 16)), NamedSharding(mesh, P(None, "x")))
    b = jax.device_put(jnp.ones((16, 4)), NamedSharding(mesh, P("x", None)))
    compiled = jax.jit(jnp.matmul).lower(a, b).compile()
    assert count_collectives(compiled) == {"all-reduce": 1}


def test_elementwise_work_needs_none(capsys):
    x = jax.device_put(jnp.ones((8, 4)), NamedSharding(auto_mesh(), P("x")))
    compiled = jax.jit(lambda v: 2 * jnp.sin(v) + 1).lower(x).compile()
    assert count_collectives(compiled) == {}
    print_collectives(compiled)
    assert capsys.readouterr().out == "collectives: none\n"


def test_gathering_a_sharded_array_is_an_all_gather(capsys):
    mesh = auto_mesh()
    x = jax.device_put(jnp.ones((8, 4)), NamedSharding(mesh, P("x")))
    gather = jax.jit(lambda v: v * 2, out_shardings=NamedSharding(mesh, P()))
    compiled = gather.lower(x).compile()
    assert count_collectives(compiled) == {"all-gather": 1}
    print_collectives(compiled)
    assert capsys.readouterr().out == "all-gather          1\n"
