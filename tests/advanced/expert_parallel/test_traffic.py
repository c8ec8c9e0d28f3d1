from pathlib import Path

import pytest

from docs_build.hlo import read, wire_bytes
from snippets.advanced.expert_parallel import dispatch, traffic

PAGE = Path(__file__).resolve().parents[3] / "docs" / "advanced" / "expert-parallel.md"


def test_a_device_sends_all_but_its_own_piece_of_the_buffer():
    assert traffic.all_to_all_bytes(8, 4, 16, 8) == 7 * 4 * 16 * 4
    assert traffic.all_to_all_bytes(8, 4, 16, 4, itemsize=2) == 3 * 8 * 4 * 16 * 2 // 4
    assert traffic.all_to_all_bytes(8, 4, 16, 1) == 0  # nothing leaves one device
    with pytest.raises(ValueError, match="6 experts do not split over 4 devices"):
        traffic.all_to_all_bytes(6, 4, 16, 4)
    with pytest.raises(ValueError, match="must be at least 1, not 0, 16 and 4"):
        traffic.all_to_all_bytes(8, 0, 16, 8)


def test_doubling_the_factor_doubles_the_traffic(x, capsys):
    sent = traffic.byte_table(x)
    assert sent == {1.0: 1792, 2.0: 3584}
    assert sent[2.0] == 2 * sent[1.0]
    assert capsys.readouterr().out.splitlines() == [
        "factor 1.0: buffer (8, 4, 16), 2048 bytes; each all_to_all sends 1792 of them",
        "factor 2.0: buffer (8, 8, 16), 4096 bytes; each all_to_all sends 3584 of them",
    ]
    text = " ".join(PAGE.read_text(encoding="utf-8").split())
    assert "Doubling the capacity factor doubles the traffic" in text


@pytest.mark.parametrize(("factor", "size"), [(1.0, 4), (2.0, 8)])
def test_the_cpu_programs_all_to_alls_carry_the_formulas_bytes(
    x, params, expert_mesh, factor, size
):
    compiled = dispatch.moe_layer(expert_mesh, factor).lower(x, params).compile()
    program = read(compiled.as_text())
    assert [c.kind for c in program.collectives] == ["all-to-all"] * 2
    for c in program.collectives:
        assert c.group_size == 8
        assert c.result_bytes == 8 * size * 16 * 4  # the whole buffer, per device
        assert wire_bytes(c) == traffic.all_to_all_bytes(8, size, 16, 8)
    results = [c.result for c in traffic.read_collectives(compiled)]
    assert results == ["(" + ", ".join([f"f32[1,{size},16]"] * 8) + ")"] * 2


def test_the_page_prints_each_all_to_all_as_eight_pieces(
    x, params, expert_mesh, capsys
):
    compiled = dispatch.moe_layer(expert_mesh, 1.0).lower(x, params).compile()
    traffic.program_shapes(compiled)
    line = "all-to-all: 8 x f32[1,4,16]; sends 1,792 of 2,048 bytes\n"
    assert capsys.readouterr().out == line * 2
    assert traffic.all_to_all_bytes(8, 4, 16, 8) == 1792  # the formula's bytes


def test_the_layer_lowers_from_shapes_alone_as_a_tpu_compile_would():
    """16 experts, 2 per device, larger sizes: no array is made, only its shape and layout."""
    import jax
    from jax import P
    from jax.sharding import AxisType, NamedSharding

    mesh = jax.make_mesh((8,), ("expert",), axis_types=(AxisType.Explicit,))

    def shape(dims, spec):
        return jax.ShapeDtypeStruct(dims, "float32", sharding=NamedSharding(mesh, spec))

    x = shape((4096, 128), P("expert"))
    params = {
        "router": shape((128, 16), P()),
        "w_in": shape((16, 128, 256), P("expert")),
        "w_out": shape((16, 256, 128), P("expert")),
    }
    compiled = dispatch.moe_layer(mesh, 1.25).lower(x, params).compile()
    size = 40  # ceil(1.25 * 512 / 16)
    program = read(compiled.as_text())
    assert [c.kind for c in program.collectives] == ["all-to-all"] * 2
    for c in program.collectives:
        assert c.result_bytes == 16 * size * 128 * 4
        assert wire_bytes(c) == traffic.all_to_all_bytes(16, size, 128, 8)
