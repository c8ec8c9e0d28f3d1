"""docs_build.figures: the block drawings hold each array's real blocks and devices, and the
step flow lists a compiled step's collectives in the order its program runs them."""

import re

import jax
import jax.numpy as jnp
import pytest
from jax import P
from jax.sharding import NamedSharding

from docs_build import figures, render
from snippets.hlo import COLLECTIVES


def held(array) -> dict[tuple, set[int]]:
    """Which devices hold which block, straight from addressable_shards."""
    out: dict[tuple, set[int]] = {}
    for shard in array.addressable_shards:
        key = tuple(
            i.indices(n)[:2] for i, n in zip(shard.index, array.shape, strict=True)
        )
        out.setdefault(key, set()).add(shard.device.id)
    return out


def drawn(svg: str, array) -> dict[tuple, set[int]]:
    """The blocks as drawn: each rect's place as a fraction of the array's rectangle, turned
    back into indices, with the device ids its label shows (or its tooltip, for a range)."""
    groups = re.findall(r'<g class="block"><title>([^<]*)</title><rect ([^>]*)/>', svg)
    rects = [
        {
            k: float(v)
            for k, v in re.findall(r'\s(x|y|width|height)="([\d.]+)"', " " + a)
        }
        for _, a in groups
    ]
    left = min(r["x"] for r in rects)
    top = min(r["y"] for r in rects)
    right = max(r["x"] + r["width"] for r in rects)
    bottom = max(r["y"] + r["height"] for r in rects)
    rows, cols = (1, array.shape[0]) if array.ndim == 1 else array.shape
    out = {}
    for (tip, _), r in zip(groups, rects, strict=True):
        r0 = round((r["y"] - top) / (bottom - top) * rows)
        r1 = round((r["y"] + r["height"] - top) / (bottom - top) * rows)
        c0 = round((r["x"] - left) / (right - left) * cols)
        c1 = round((r["x"] + r["width"] - left) / (right - left) * cols)
        key = ((c0, c1),) if array.ndim == 1 else ((r0, r1), (c0, c1))
        ids = tip.split(" on ")[1].split(" ", 1)[1]
        if "-" in ids:
            a, b = map(int, ids.split("-"))
            devices = set(range(a, b + 1))
        else:
            devices = {int(i) for i in ids.split(", ")}
        out[key] = devices
    return out


@pytest.mark.parametrize(
    "spec, shape",
    [
        (P("x", "y"), (8, 16)),
        (P("y", "x"), (8, 16)),
        (P(None, "y"), (4, 32)),
        (P("x"), (8, 4)),
        (P(("x", "y")), (16,)),
        (P(), (32, 128)),
    ],
)
def test_blocks_are_the_arrays_shards(mesh, spec, shape):
    array = jax.device_put(jnp.zeros(shape), NamedSharding(mesh, spec))
    figure = figures.blocks("title", ("a", array))
    assert drawn(figure.svg, array) == held(array)
    # the text alternative lists the same blocks
    for key, devices in held(array).items():
        where = ", ".join(f"{a}:{b}" for a, b in key)
        ids = sorted(devices)
        assert f"block [{where}]: device" in figure.text
        assert str(ids[0]) in figure.text.split(f"block [{where}]: ")[1].splitlines()[0]


def test_blocks_name_the_mesh_axis_that_cuts_each_dimension(mesh):
    array = jax.device_put(jnp.zeros((8, 16)), NamedSharding(mesh, P(None, ("y", "x"))))
    text = figures.blocks("t", ("a", array)).text.splitlines()
    assert text[1] == "a: float32[8,16@(y,x)]"
    assert text[2:4] == [
        "  dim 0 (8): whole",
        "  dim 1 (16): split over y, x, 8 pieces",
    ]
    copies = jax.device_put(jnp.zeros((8, 4)), NamedSharding(mesh, P("x")))
    assert "  copies along y (4)" in figures.blocks("t", ("b", copies)).text


def test_blocks_label_each_device_in_its_colour(mesh):
    array = jax.device_put(jnp.zeros((8, 16)), NamedSharding(mesh, P("x", "y")))
    svg = figures.blocks("t", ("a", array)).svg
    labels = re.findall(r'<tspan fill="(#\w+)">(\d+)</tspan>', svg)
    assert sorted(int(d) for _, d in labels) == list(range(8))
    assert all(c == render.DEVICE_COLOURS[int(d)] for c, d in labels)
    assert 'role="img"' in svg and 'aria-label="t. a: float32[8@x,16@y]' in svg
    # 13 px text in a drawing at most 360 wide: above 11 px on a 390 px phone
    assert re.search(r'viewBox="0 0 (\d+)', svg)[1] == "360" and 'font-size="13"' in svg


def test_blocks_refuse_what_they_cannot_draw(mesh):
    with pytest.raises(ValueError, match="1-D and 2-D"):
        figures.blocks("t", ("a", jnp.zeros((2, 2, 2))))
    with pytest.raises(ValueError, match="at least one"):
        figures.blocks("t")


def grid_drawn(svg: str) -> list[list[int]]:
    """The device ids of a mesh drawing, row by row, from each cell's place and label."""
    cells = re.findall(
        r'<rect x="([\d.]+)" y="([\d.]+)"[^>]*/><text[^>]*><tspan fill="#\w+">(\d+)<',
        svg,
    )
    rows: dict[float, list[tuple[float, int]]] = {}
    for x, y, device in cells:
        rows.setdefault(float(y), []).append((float(x), int(device)))
    return [[d for _, d in sorted(rows[y])] for y in sorted(rows)]


def test_a_mesh_is_drawn_as_its_device_ids(devices):
    """The devices-and-meshes page's drawing: each cell holds the device at that place of
    mesh.device_ids, in its colour, also for a mesh whose devices are not in id order."""
    import numpy as np
    from jax.sharding import AxisType, Mesh

    mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    shuffled = Mesh(
        np.array(devices)[[3, 0, 6, 1, 7, 2, 5, 4]].reshape(4, 2), ("a", "b")
    )
    for m in (mesh, shuffled):
        figure = figures.mesh_grid(m, "t")
        assert grid_drawn(figure.svg) == np.asarray(m.device_ids).tolist()
        down, across = m.axis_names
        rows, cols = np.asarray(m.device_ids).shape
        assert figure.text.splitlines()[:2] == [
            "t",
            f"mesh axes: {across} ({cols}) across, {down} ({rows}) down",
        ]
    line = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Explicit,))
    assert grid_drawn(figures.mesh_grid(line, "t").svg) == [list(range(8))]
    labels = re.findall(
        r'<tspan fill="(#\w+)">(\d+)</tspan>', figures.mesh_grid(mesh, "t").svg
    )
    assert all(c == render.DEVICE_COLOURS[int(d)] for c, d in labels)
    cube = jax.make_mesh(
        (2, 2, 2), ("x", "y", "z"), axis_types=(AxisType.Explicit,) * 3
    )
    with pytest.raises(ValueError, match="1-D and 2-D meshes; this one has 3 axes"):
        figures.mesh_grid(cube, "t")


def test_stacked_bars_draw_each_part_to_one_scale():
    """The choosing page's bars: each part as wide as its bytes on the one scale where the
    largest total fills the bar; parts that differ from row to row are refused."""
    rows = [("a", [("w", 300), ("t", 100)]), ("b", [("w", 50), ("t", 150)])]
    figure = figures.stacked_bars("t", rows)
    drawn = [
        (int(b), float(w))
        for w, b in re.findall(
            r'width="([\d.]+)" height="16" [^>]*data-bytes="(\d+)"', figure.svg
        )
    ]
    assert [b for b, _ in drawn] == [300, 100, 50, 150]
    full = drawn[0][1] + drawn[1][1]  # the largest total, 400 bytes
    for count, width in drawn:
        assert width == pytest.approx(count / 400 * full, abs=0.01)
    assert figure.text.splitlines()[2:] == [
        "  a: w 300 B, t 100 B; 400 B",
        "  b: w 50 B, t 150 B; 200 B",
    ]
    with pytest.raises(ValueError, match="parts"):
        figures.stacked_bars("t", [("a", [("w", 1)]), ("b", [("t", 1)])])
    with pytest.raises(ValueError, match="whole number"):
        figures.stacked_bars("t", [("a", [("w", -1)])])
    with pytest.raises(ValueError, match="needs rows"):
        figures.stacked_bars("t", [])


@pytest.fixture(scope="module")
def fsdp_like(line_mesh):
    """Two weights of different shapes split over x, gathered for use; compiled for CPU."""
    from flax import nnx

    class Two(nnx.Module):
        def __init__(self):
            self.a = nnx.Param(jnp.ones((16, 24)))
            self.b = nnx.Param(jnp.ones((24, 8)))

    model = Two()
    state = nnx.state(model)
    split = jax.device_put(state, NamedSharding(line_mesh, P("x")))
    nnx.update(model, split)
    everywhere = NamedSharding(line_mesh, P())

    def loss(model, x):
        a = jax.lax.with_sharding_constraint(model.a[...], everywhere)
        b = jax.lax.with_sharding_constraint(model.b[...], everywhere)
        return jnp.sum(jnp.tanh(x @ a) @ b)

    x = jax.device_put(jnp.ones((8, 16)), NamedSharding(line_mesh, P("x")))
    compiled = jax.jit(nnx.grad(loss)).lower(model, x).compile()
    return compiled, model


def test_step_flow_follows_the_programs_collectives_in_order(fsdp_like):
    compiled, model = fsdp_like
    text = compiled.as_text()
    entry = text[text.index("\nENTRY ") :]
    ops = re.findall(r"= (?:\(.*?\)|\S+) ([\w-]+)\(", entry[: entry.index("\n}")])
    in_hlo = [
        o.removesuffix("-start") for o in ops if o.removesuffix("-start") in COLLECTIVES
    ]
    figure = figures.step_flow(compiled, model, "step")
    listed = [
        line.split(". ", 1)[1].split(" ", 1)[0]
        for line in figure.text.splitlines()[2:]
        if not line.split(". ", 1)[1].startswith("compute")
    ]
    assert [figures.KIND_NAMES[k] for k in in_hlo] == listed
    assert "gather" in listed  # the constraint gathers both weights
    gathers = [ln for ln in figure.text.splitlines() if ". gather " in ln]
    assert sorted(g.split("gather ")[1].split(" (")[0] for g in gathers) == ["a", "b"]
    assert any("f32[16,24]" in g and "gather a " in g for g in gathers)
    assert figure.text.splitlines()[1] == "CPU program, in the order it runs:"
    assert figure.html.count("<li") == len(figure.text.splitlines()) - 2


def test_step_flow_on_the_fsdp_page_names_every_parameter(capsys):
    """The page's own step (CPU): each parameter gathered whole once, then one all-reduce
    of the loss and every gradient; compute between them."""
    from snippets.training.fsdp import placement, step

    mesh = placement.data_mesh()
    _, model, optimizer = placement.place_fsdp(mesh)
    compiled = step.compile_fsdp(
        step.fsdp_step_for(mesh), model, optimizer, step.sharded_data(mesh)
    )
    capsys.readouterr()
    lines = figures.step_flow(compiled, model, "step").text.splitlines()[2:]
    gathered = sorted(
        ln.split("gather ")[1].split(" (")[0] for ln in lines if ". gather " in ln
    )
    assert gathered == ["down.bias", "down.kernel", "up.bias", "up.kernel"]
    (reduce,) = [ln for ln in lines if ". all-reduce " in ln]
    for name in gathered:
        assert name in reduce
    assert lines.index(reduce) > max(
        i for i, ln in enumerate(lines) if ". gather " in ln
    )
    assert any(ln.endswith(". compute") for ln in lines)


# ---------------------------------------------------------------------------------------------
# arrows: a collective of the collectives page, drawn from its arrays and its program.


def arrow_ends(svg: str) -> dict[str, list[tuple[int, int]]]:
    """Each drawn arrow as (device box it leaves, device box it reaches), by colour: its
    ends' x turned back into the box under them (or None, for a reduction's node)."""
    pitch = (figures.WIDTH - figures.LEFT - figures.PAD) / 8
    ends: dict[str, list] = {}
    for colour, d in re.findall(r'<path stroke="([^"]+)" d="([^"]+)"/>', svg):
        for x1, _, x2, _ in re.findall(r"M([\d.]+) ([\d.]+)L([\d.]+) ([\d.]+)l", d):
            ends.setdefault(colour, []).append(
                tuple(int((float(x) - figures.LEFT) // pitch) for x in (x1, x2))
            )
    return ends


@pytest.fixture(scope="module")
def page_data(line_mesh):
    from snippets.concepts.collectives import diagram

    return diagram.build_data(line_mesh)


def test_ppermute_arrows_are_the_ring_the_code_passes(line_mesh, page_data, capsys):
    from snippets.concepts.collectives import movement

    shift, before, after = movement.ring_shift(line_mesh, page_data[0])
    figure = figures.arrows(shift, before, after, "ppermute")
    ring = [
        (i, (i + 1) % 8) for i in range(8)
    ]  # the page's `ring`, as its test reads it
    drawn = sorted(p for ps in arrow_ends(figure.svg).values() for p in ps)
    assert drawn == sorted(ring)
    # each arrow in the colour of the device it leaves
    for colour, pairs in arrow_ends(figure.svg).items():
        assert {render.DEVICE_COLOURS[s] for s, _ in pairs} == {colour}
    lines = figure.text.splitlines()
    assert lines[1] == "compiled: collective-permute, 8 pairs"
    assert "device 0 sends 0 1 to device 1" in lines
    assert "device 7 sends 70 71 to device 0" in lines
    assert re.search(r'viewBox="0 0 (\d+)', figure.svg)[1] == "360"
    assert 'font-size="13"' in figure.svg


def test_arrows_follow_another_permutation_too(line_mesh, page_data, capsys):
    """Nothing is typed twice: a different perm gives its own arrows."""
    from snippets.concepts.collectives.diagram import per_device

    swap = [(0, 3), (3, 0), (1, 2), (2, 1), (4, 7), (7, 4), (5, 6), (6, 5)]

    def f(b):
        return jax.lax.ppermute(b, "x", perm=swap)

    before, after = per_device(f, page_data[0], line_mesh)
    figure = figures.arrows(f, before, after, "swap")
    assert sorted(p for ps in arrow_ends(figure.svg).values() for p in ps) == sorted(
        swap
    )
    assert "device 4 sends 40 41 to device 7" in figure.text


def test_arrows_refuse_arrays_that_disagree_with_the_program(line_mesh, page_data):
    from snippets.concepts.collectives import movement
    from snippets.concepts.collectives.diagram import per_device

    shift, _, _ = movement.ring_shift(line_mesh, page_data[0])
    back = [(i, (i - 1) % 8) for i in range(8)]
    before, after = per_device(
        lambda b: jax.lax.ppermute(b, "x", perm=back), page_data[0], line_mesh
    )
    with pytest.raises(ValueError, match="the compiled collective-permute between"):
        figures.arrows(shift, before, after, "ring drawn with the wrong arrays")


def test_all_to_all_sends_piece_j_of_device_i_to_device_j(line_mesh, page_data):
    from snippets.concepts.collectives import movement

    exchange, before, after = movement.all_to_all(line_mesh, page_data[1])
    figure = figures.arrows(exchange, before, after, "all_to_all")
    pitch = (figures.WIDTH - figures.LEFT - figures.PAD) / 8
    box = round(pitch - 4)
    starts = re.findall(
        r'<path stroke="([^"]+)" d="([^"]+)"/>', figure.svg
    )  # per sender: where in its box each arrow leaves, and where it lands
    for colour, d in starts:
        i = render.DEVICE_COLOURS.index(colour)
        for x1, x2 in re.findall(r"M([\d.]+) [\d.]+L([\d.]+) [\d.]+l", d):
            j = int((float(x2) - figures.LEFT) // pitch)
            left = round(figures.LEFT + i * pitch)
            # piece j leaves from the j-th eighth of device i's box
            assert int((float(x1) - left) / box * 8) == j
            # and lands in the i-th eighth of device j's
            assert int((float(x2) - round(figures.LEFT + j * pitch)) / box * 8) == i
    assert sum(len(p) for p in arrow_ends(figure.svg).values()) == 64
    assert (
        "device 1 sends one piece to each of devices 0-7 in turn: "
        "10, 11, 12, 13, 14, 15, 16, 17" in figure.text
    )


def test_reductions_converge_within_the_compiled_groups(mesh, line_mesh, page_data):
    from snippets.concepts.collectives import reductions

    row_total, before, after = reductions.psum_one_axis(mesh, page_data[0])
    figure = figures.arrows(row_total, before, after, "psum y")
    assert figure.text.splitlines()[1] == "compiled: all-reduce, devices 0-3 | 4-7"
    assert figure.svg.count("<circle") == 2
    into = {
        s: node
        for c, ps in arrow_ends(figure.svg).items()
        if c != "currentColor"
        for s, node in ps
    }
    # devices 0-3 meet at one node, 4-7 at the other
    assert (
        len({into[d] for d in range(4)}) == 1
        and len({into[d] for d in range(4, 8)}) == 1
    )
    assert into[0] != into[4]
    assert (
        "devices 0-3 send their blocks to be combined; each gets 60 64" in figure.text
    )
    largest, before, after = reductions.pmax(line_mesh, page_data[0])
    assert (
        "each gets 70 71 (device 7's)"
        in figures.arrows(largest, before, after, "pmax").text
    )


def test_arrows_refuse_a_body_without_one_collective(line_mesh, page_data):
    from snippets.concepts.collectives.diagram import per_device

    before, after = per_device(lambda b: b * 2, page_data[0], line_mesh)
    with pytest.raises(ValueError, match="compiles to 0"):
        figures.arrows(lambda b: b * 2, before, after, "none")


def test_ring_steps_read_the_pairs_from_the_program(line_mesh):
    """A ring turning the other way is drawn turning the other way: nothing is typed."""
    left = [(i, (i - 1) % 8) for i in range(8)]

    def body(b):
        for _ in range(7):
            b = jax.lax.ppermute(b, "x", left)
        return b

    run = jax.shard_map(body, mesh=line_mesh, in_specs=P("x"), out_specs=P("x"))
    x = jax.device_put(jnp.arange(8.0), NamedSharding(line_mesh, P("x")))
    compiled = jax.jit(run).lower(x).compile()
    pairs, held = figures.ring_holdings(compiled, line_mesh)
    assert pairs == sorted(left)
    assert held[1] == [(i + 1) % 8 for i in range(8)]
    figure = figures.ring_steps(compiled, line_mesh, "left")
    assert "step 2: devices 0-7 hold blocks 2 3 4 5 6 7 0 1" in figure.text
    assert re.search(r'viewBox="0 0 (\d+)', figure.svg)[1] == "360"
    assert 'font-size="13"' in figure.svg
