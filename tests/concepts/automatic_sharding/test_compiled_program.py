from jax import P

from snippets.concepts.automatic_sharding import compiled_program
from snippets.hlo import count_collectives


def test_the_compiled_program_reports_its_shardings(x, capsys):
    capsys.readouterr()
    compiled = compiled_program.chosen_shardings(x)
    assert compiled.output_shardings.spec == P("y")
    assert count_collectives(compiled) == {"all-reduce": 1}
    assert capsys.readouterr().out.splitlines() == [
        "input:  P('x', 'y')",
        "output: P('y',)",
    ]


def test_the_hlo_gathers_along_y_then_x_with_per_device_shapes(x, auto_mesh, capsys):
    capsys.readouterr()
    lines = compiled_program.hlo_lines(x, auto_mesh)
    assert len(lines) == 2
    assert "f32[4,4]" in lines[0] and lines[0].endswith("{'y'}")
    assert "f32[8,4]" in lines[1] and lines[1].endswith("{'x'}")
    assert all("over mesh['x'=2,'y'=4]" in line for line in lines)
    assert capsys.readouterr().out.splitlines() == lines


def test_before_compiling_the_gather_is_not_there_but_a_shard_map_psum_is(x, auto_mesh):
    import jax
    from jax.sharding import NamedSharding

    gather = jax.jit(lambda a: 2 * a, out_shardings=NamedSharding(auto_mesh, P()))
    lowered = gather.lower(x).as_text()
    assert "sharding" in lowered and "all_gather" not in lowered
    written = jax.shard_map(
        lambda b: jax.lax.psum(b, "x"),
        mesh=auto_mesh,
        in_specs=P("x", "y"),
        out_specs=P(None, "y"),
    )
    assert "all_reduce" in jax.jit(written).lower(x).as_text()
