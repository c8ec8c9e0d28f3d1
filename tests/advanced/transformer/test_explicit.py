from pathlib import Path

import jax
import numpy as np
from jax.sharding import AxisType

from snippets.advanced.transformer import explicit
from tests.advanced.transformer.printed import quietly

PAGE = Path(__file__).resolve().parents[3] / "docs" / "advanced" / "transformer.md"


def test_the_whole_step_runs_on_explicit_axes_with_the_same_losses(
    explicit_run, one_device
):
    (mesh_x, losses_x), out = explicit_run
    assert mesh_x.axis_types == (AxisType.Explicit,) * 3
    losses = one_device[0][0]
    # The first step's loss is the same to the bit; later ones carry the programs'
    # different roundings, within the bound of the one-device comparison.
    assert losses_x[0] == losses[0]
    np.testing.assert_allclose(losses_x, losses, rtol=2e-3)
    # The page: the later losses are not the same to the bit (the gradients differ).
    assert losses_x[1:] != losses[1:]
    said = " ".join(PAGE.read_text().split())
    assert "The first loss is the one of `Auto` axes to the bit; the later ones" in said
    lines = out.splitlines()
    assert lines[0] == "float32[2,32@fsdp,128@tensor]"
    assert lines[1] == "step   Auto axes  Explicit axes  within a relative 0.002"
    for i, (line, a, b) in enumerate(zip(lines[2:], losses, losses_x, strict=True)):
        assert line.split() == [str(i), f"{a:.3f}", f"{b:.3f}", "True"]


def test_the_explicit_state_carries_its_layout_in_its_type(cfg, sharded):
    from snippets.advanced.transformer.init import build_mesh, sharded_init

    mesh_x = build_mesh(kind=AxisType.Explicit)
    abstract = sharded_init(cfg, mesh_x).abstract
    up = abstract["model"]["layers"]["up"].get_value()
    assert up.sharding.mesh.axis_types == (AxisType.Explicit,) * 3
    same = jax.tree.map(lambda a: a.sharding.spec, sharded.abstract)
    assert jax.tree.map(lambda a: a.sharding.spec, abstract) == same


def test_optax_integer_label_loss_is_ambiguous_on_explicit_axes(cfg, explicit_run):
    (mesh_x, _), _ = explicit_run
    _, out = quietly(explicit.optax_loss_on_explicit, cfg, mesh_x)
    assert out.startswith(
        "ShardingTypeError: Use `.at[...].get(out_sharding=)` to provide output "
        "PartitionSpec for the gather indexing"
    )
    assert "float32[8@(data,fsdp),16,64@tensor]" in out


def test_the_page_says_what_the_optax_loss_does_on_explicit_axes(cfg, explicit_run):
    """The page names the error in a sentence, without the block: this keeps it true."""
    from pathlib import Path

    page = Path(__file__).resolve().parents[3] / "docs" / "advanced" / "transformer.md"
    said = " ".join(page.read_text().split())
    (mesh_x, _), _ = explicit_run
    _, out = quietly(explicit.optax_loss_on_explicit, cfg, mesh_x)
    assert out.split(":")[0] == "ShardingTypeError" and "get(out_sharding=)" in out
    assert (
        "with a `ShardingTypeError` that asks for the gather's `out_sharding`" in said
    )
