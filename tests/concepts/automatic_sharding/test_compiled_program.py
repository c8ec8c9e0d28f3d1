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
