import re
from pathlib import Path

import jax
import numpy as np
import pytest
from jax import P

from snippets.advanced.transformer import step
from tests.advanced.transformer.printed import quietly

# The tolerance the page states for the 8-device losses against the one-device ones.
LOSS_RTOL = 2e-3
PAGE = Path(__file__).resolve().parents[3] / "docs" / "advanced" / "transformer.md"


def test_a_batch_is_split_four_ways_by_the_batch_rule(batches, cfg):
    assert len(batches) == 5
    for tokens in batches:
        assert tokens.shape == (8, cfg.seq + 1)
        assert tokens.sharding.spec == P(("data", "fsdp"), None)
        assert {s.data.shape for s in tokens.addressable_shards} == {(2, cfg.seq + 1)}
    # Counting sequences: every example steps by the same stride, modulo the vocabulary.
    tokens = np.asarray(batches[0])
    steps = np.diff(tokens, axis=1) % cfg.vocab
    assert (steps == steps[:, :1]).all() and set(steps[:, 0]) <= {1, 2, 3}


@pytest.mark.parametrize(
    ("batch", "microbatches", "message"),
    [
        (
            6,
            1,
            r"A batch of 6 does not split into 1 microbatch\(es\) over \('data', "
            r"'fsdp'\): make it a multiple of 4\.",
        ),
        (
            8,
            4,
            r"A batch of 8 does not split into 4 microbatch\(es\) .* multiple of 16\.",
        ),
        (10, 2, r"A batch of 10 does not split into 2 .* multiple of 8\."),
    ],
)
def test_a_batch_that_does_not_split_is_refused(
    mesh, cfg, batch, microbatches, message
):
    tokens = step.token_batches(cfg, steps=1, batch=batch)[0]
    with pytest.raises(ValueError, match=message):
        step.shard_batch(tokens, mesh, microbatches)


def test_token_batches_refuses_empty_sizes(cfg):
    with pytest.raises(ValueError, match="need steps >= 1 and batch >= 1, got 0 and 8"):
        step.token_batches(cfg, steps=0, batch=8)


def test_the_step_compiles_from_shapes_with_the_states_shardings(
    sharded, compiled_step
):
    _, tokens_spec, compiled = compiled_step
    assert isinstance(tokens_spec, jax.ShapeDtypeStruct)
    expected = [a.sharding for a in jax.tree.leaves(sharded.abstract)]
    state_in, tokens_in = compiled.input_shardings[0]
    assert [s.spec for s in jax.tree.leaves(state_in)] == [s.spec for s in expected]
    assert tokens_in.spec == P(("data", "fsdp"), None)
    state_out = jax.tree.leaves(compiled.output_shardings[0])
    assert [s.spec for s in state_out] == [s.spec for s in expected]


def test_the_step_donates_its_input_state(sharded, compiled_step):
    batches, _, compiled = compiled_step
    fresh = sharded.init()
    (new, loss), out = quietly(step.first_step, compiled, fresh, batches)
    assert all(a.is_deleted() for a in jax.tree.leaves(fresh))
    assert not any(a.is_deleted() for a in jax.tree.leaves(new))
    # The new state keeps the layout of the old one, array by array.
    for a, x in zip(
        jax.tree.leaves(sharded.abstract), jax.tree.leaves(new), strict=True
    ):
        assert x.sharding == a.sharding
    assert new["optimizer"]["step"][...] == 1
    lines = out.splitlines()
    assert lines[0] == f"loss {loss:.3f}"
    assert lines[1:] == [
        "old state deleted: True",
        "RuntimeError: Array has been deleted with shape=float32[32,64].",
    ]
    # At the start every next token is equally likely: the loss is about log(vocab).
    assert abs(loss - np.log(64)) < 0.05


def test_eight_devices_and_one_device_give_the_same_losses(one_device):
    (losses, losses_alone), out = one_device
    assert len(losses) == len(losses_alone) == 5
    np.testing.assert_allclose(losses, losses_alone, rtol=LOSS_RTOL)
    assert losses[-1] < losses[0] - 0.2  # and the model learns
    rows = [line.split() for line in out.splitlines()]
    assert rows[0] == [
        "step",
        "8",
        "devices",
        "one",
        "device",
        "within",
        "a",
        "relative",
        "0.002",
    ]
    for i, (row, a, b) in enumerate(zip(rows[1:], losses, losses_alone, strict=True)):
        assert row == [str(i), f"{a:.3f}", f"{b:.3f}", "True"]
    prose = " ".join(PAGE.read_text().split())
    assert f"agree within a relative {LOSS_RTOL:.0e}".replace("e-03", "e-3") in prose


def test_device_put_to_one_device_shares_replicated_buffers(mesh):
    """The trap the page's annotation names: may_alias=False still shared them."""
    from jax.sharding import NamedSharding

    from snippets.advanced.transformer.init import build_mesh

    one = build_mesh((1, 1, 1))
    x = jax.device_put(np.zeros(4, np.float32), NamedSharding(mesh, P()))
    y = jax.device_put(x, NamedSharding(one, P()), may_alias=False)
    x.delete()
    assert y.is_deleted()


def test_two_microbatches_give_the_big_batch_gradients(accumulated):
    ((loss, grads), (loss_2, grads_2)), out = accumulated
    np.testing.assert_allclose(float(loss_2), float(loss), rtol=1e-6)
    largest = max(float(np.abs(g).max()) for g in jax.tree.leaves(grads))
    gap = 0.0
    for a, b in zip(jax.tree.leaves(grads), jax.tree.leaves(grads_2), strict=True):
        # bfloat16 rounding: within a hundredth of the largest gradient, entry by entry
        np.testing.assert_allclose(b, a, atol=1e-2 * largest)
        gap = max(gap, float(np.abs(np.asarray(a) - np.asarray(b)).max()))
    assert out.splitlines() == [
        f"loss       one batch {float(loss):.3f}   two microbatches {float(loss_2):.3f}",
        "gradients within 1% of the largest one: True",
    ]


def test_the_accumulating_step_makes_the_same_update(
    sharded, mesh, batches, accumulated
):
    """Every weight whose gradient is not within rounding of zero gets the same update.

    "Within rounding of zero": no larger than the largest difference between the two runs'
    gradients. AdamW's first step moves a weight by the learning rate times the sign of its
    gradient, so only those entries may move differently.
    """
    (_, grads), (_, grads_2) = accumulated[0]
    gap = max(
        float(np.abs(a - b).max())
        for a, b in zip(jax.tree.leaves(grads), jax.tree.leaves(grads_2), strict=True)
    )
    big, loss = step.make_train_step(sharded, mesh)(sharded.init(), batches[0])
    accumulated_step = step.make_train_step(sharded, mesh, microbatches=2)
    small, loss_2 = accumulated_step(sharded.init(), batches[0])
    np.testing.assert_allclose(float(loss_2), float(loss), rtol=1e-6)
    checked = total = 0
    for g, g2, a, b, s in zip(
        jax.tree.leaves(grads),
        jax.tree.leaves(grads_2),
        jax.tree.leaves(big["model"]),
        jax.tree.leaves(small["model"]),
        jax.tree.leaves(sharded.abstract["model"]),
        strict=True,
    ):
        g, g2 = np.asarray(g), np.asarray(g2)
        clear = (np.abs(g) > gap) | ((g == 0) & (g2 == 0))
        # 1e-6 is a ten-thousandth of the learning rate, the size of a first AdamW step:
        # float32 rounding of g / (|g| + eps) moved one weight by 1.3e-7.
        np.testing.assert_allclose(
            np.asarray(b)[clear], np.asarray(a)[clear], atol=1e-6
        )
        assert b.sharding == s.sharding
        checked += int(clear.sum())
        total += g.size
    assert checked > 0.75 * total


def test_matrix_products_take_bfloat16_and_the_loss_is_float32(
    sharded, mesh, compiled_step
):
    _, tokens_spec, compiled = compiled_step
    lowered = step.make_train_step(sharded, mesh).lower(sharded.abstract, tokens_spec)
    types = re.findall(
        r"stablehlo\.dot_general .*?: \(tensor<[^>]*x(\w+)>, tensor<[^>]*x(\w+)>\)",
        lowered.as_text(),
    )
    assert len(types) > 20
    # Forward and backward: every product has a bfloat16 operand, none is float32 by
    # float32 (the attention's backward pass multiplies its float32 score gradients).
    assert all("bf16" in pair for pair in types)
    assert sum(pair == ("bf16", "bf16") for pair in types) >= 20
    assert compiled.out_info[1].dtype == np.float32
    params = jax.tree.leaves(sharded.abstract["model"])
    assert {p.dtype for p in params} == {np.dtype(np.float32)}


def accumulation_traffic(cfg, sharded, mesh, microbatches):
    """The collectives of a step of 32 sequences in `microbatches`, compiled for the CPU."""
    from docs_build import hlo

    tokens = step.token_batches(cfg, steps=1, batch=32)[0]
    placed = step.shard_batch(tokens, mesh, microbatches)
    spec = jax.ShapeDtypeStruct(placed.shape, placed.dtype, sharding=placed.sharding)
    program = step.make_train_step(sharded, mesh, microbatches)
    compiled = program.lower(sharded.abstract, spec).compile()
    return hlo.read(compiled.as_text()).collectives


def test_accumulation_multiplies_the_gathers_and_the_bytes(cfg, sharded, mesh):
    """The page: four microbatches run the all-gathers 115 times instead of 31, the
    all-reduces 72 times instead of 17 (the gradients summed in each microbatch), and send
    2.1 times the bytes."""
    from docs_build import hlo

    one = accumulation_traffic(cfg, sharded, mesh, 1)
    four = accumulation_traffic(cfg, sharded, mesh, 4)
    runs = {
        k: (hlo.summarize(one)[k]["runs"], hlo.summarize(four)[k]["runs"])
        for k in ("all-gather", "all-reduce")
    }
    assert runs == {"all-gather": (31, 115), "all-reduce": (17, 72)}
    grads = [c for c in four if c.kind == "all-reduce" and len(c.shapes) > 3]
    assert grads and all(c.trip_counts for c in grads)  # inside the loops
    wire = [sum(hlo.wire_bytes(c) * c.runs for c in cs) for cs in (one, four)]
    assert round(wire[1] / wire[0], 1) == 2.1
    text = " ".join(PAGE.read_text().split())
    assert (
        "runs its all-gathers 115 times where the same 32 sequences in one batch"
        in text
    )
    assert "all-reduces run 72 times instead of 17" in text
    assert "that is 2.1 times the bytes per step" in text
