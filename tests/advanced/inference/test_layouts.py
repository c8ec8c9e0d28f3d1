import math
import re
from pathlib import Path

import jax
import numpy as np
import pytest
from jax import P
from jax.sharding import AxisType

from snippets.advanced.inference import decode, layouts
from snippets.hlo import count_collectives
from tests.advanced.inference.conftest import quietly

PAGE = Path(__file__).resolve().parents[3] / "docs" / "advanced" / "inference.md"
SHAPES = decode.weight_shapes()
W_BYTES = 4 * sum(math.prod(s) for s in SHAPES.values())  # every weight, float32
ATTENTION = ("wq", "wk", "wv", "wo")
CACHE_BYTES = 2 * 8 * 8 * 32 * 16 * 4  # k and v, (batch, heads, MAX_LEN, head_dim)


def shard_shapes(tree) -> dict:
    return jax.tree.map(lambda a: a.sharding.shard_shape(a.shape), tree)


def all_reduce_shapes(compiled) -> list[str]:
    return re.findall(r"= (f32\[[\d,]*\])\S* all-reduce\(", compiled.as_text())


def table_rows(printed: str) -> dict[str, list[str]]:
    """The rich table's rows by their first cell; a cell's lines joined by spaces."""
    rows, current = {}, None
    for line in printed.splitlines():
        cells = [c.strip() for c in re.split("[│┃]", line)[1:-1]]
        if not cells:
            current = None
            continue
        if cells[0]:
            current = cells[0]
            rows[current] = cells[1:]
        elif current is not None:
            rows[current] = [
                f"{a} {b}".strip()
                for a, b in zip(rows[current], cells[1:], strict=True)
            ]
    return rows


def test_the_two_layouts_split_batch_or_heads():
    assert layouts.LAYOUTS["batch"] == {
        "cache": P("x"),
        "tokens": P("x"),
        "weights": {},
    }
    heads = layouts.LAYOUTS["heads"]
    assert heads["cache"] == P(None, "x") and heads["tokens"] == P()
    assert heads["weights"] == {
        "wq": P(None, "x"),
        "wk": P(None, "x"),
        "wv": P(None, "x"),
        "wo": P("x"),
    }


def test_each_layout_gives_each_device_its_shard(found):
    by = {layout: entry[0] for layout, entry in found[0].items()}
    assert shard_shapes(by["batch"][1]) == {"k": (1, 8, 32, 16), "v": (1, 8, 32, 16)}
    assert shard_shapes(by["heads"][1]) == {"k": (8, 1, 32, 16), "v": (8, 1, 32, 16)}
    assert shard_shapes(by["batch"][0]) == SHAPES
    assert shard_shapes(by["heads"][0]) == {
        **SHAPES,
        "wq": (128, 1, 16),
        "wk": (128, 1, 16),
        "wv": (128, 1, 16),
        "wo": (1, 16, 128),
    }
    assert by["batch"][2].sharding.spec == P("x")
    assert by["heads"][2].sharding.spec == P()
    assert by["heads"][3].sharding.spec == P()


def test_bytes_per_device_follow_the_split(found):
    by = {layout: entry[0] for layout, entry in found[0].items()}
    attention = 4 * sum(math.prod(SHAPES[n]) for n in ATTENTION)
    assert layouts.bytes_per_device(by["batch"][1]) == CACHE_BYTES // 8 == 32768
    assert layouts.bytes_per_device(by["heads"][1]) == CACHE_BYTES // 8
    assert layouts.bytes_per_device(by["batch"][0]) == W_BYTES == 344064
    heads = W_BYTES - attention + attention // 8
    assert layouts.bytes_per_device(by["heads"][0]) == heads == 114688


def test_collectives_of_the_cpu_compiled_programs(found):
    (_, batch_prefill, batch_step) = found[0]["batch"]
    (_, heads_prefill, heads_step) = found[0]["heads"]
    assert count_collectives(batch_prefill) == count_collectives(batch_step) == {}
    assert count_collectives(heads_prefill) == {"all-reduce": 1}
    assert count_collectives(heads_step) == {"all-reduce": 1}
    assert all_reduce_shapes(heads_prefill) == ["f32[8,8,128]"]  # batch, T, D_MODEL
    assert all_reduce_shapes(heads_step) == ["f32[8,1,128]"]  # batch, 1, D_MODEL
    assert layouts.collective_results(heads_step) == ["all-reduce f32[8,1,128]"]
    assert layouts.collective_results(batch_step) == []


def test_the_donated_cache_is_aliased_on_every_device(found):
    for _, _, step in found[0].values():
        assert step.memory_analysis().alias_size_in_bytes == CACHE_BYTES // 8
        assert "may-alias" in step.as_text().splitlines()[0]


def test_the_printed_table_holds_the_measurements(found):
    rows = table_rows(found[1])
    assert rows["per device"] == ["by batch, batch 8", "by heads, batch 8"]
    assert rows["cache spec"] == ["P('x',)", "P(None, 'x')"]
    assert rows["cache shard"] == ["(1, 8, 32, 16)", "(8, 1, 32, 16)"]
    assert rows["cache bytes (k, v)"] == ["32,768", "32,768"]
    assert rows["weight bytes"] == ["344,064", "114,688"]
    assert rows["prefill"] == ["none", "all-reduce f32[8,8,128]"]
    assert rows["decode step"] == ["none", "all-reduce f32[8,1,128]"]
    assert rows["aliased bytes"] == ["32,768", "32,768"]
    assert "Compiled for the CPU backend" in found[1]


def test_both_layouts_generate_what_numpy_and_one_device_do(
    found, page_inputs, one_device, reference
):
    weights, prompt = page_inputs
    tokens, logits = one_device[0][2:]
    for layout, (args, first, step) in found[0].items():
        got, got_logits = layouts.generate_on_mesh(args, first, step, weights, prompt)
        np.testing.assert_array_equal(got, tokens, err_msg=layout)
        np.testing.assert_array_equal(got, reference[0], err_msg=layout)
        np.testing.assert_allclose(got_logits, reference[1], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got_logits, logits, rtol=1e-5, atol=1e-5)
    _, printed = quietly(
        layouts.generate_sharded, found[0], weights, prompt, tokens, logits
    )
    lines = printed.splitlines()
    assert lines == [
        "batch: same tokens as one device: True, logits within 0.0001: True",
        "heads: same tokens as one device: True, logits within 0.0001: True",
    ]


def test_a_sharded_step_keeps_the_layout_and_consumes_its_input(found, page_inputs):
    weights, prompt = page_inputs
    for layout, (args, first, step) in found[0].items():
        on = jax.tree.map(lambda a: a.sharding, args)
        placed = jax.device_put(weights, on[0])
        cache = jax.device_put(decode.empty_cache(8), on[1])
        token, _, cache = first(placed, cache, jax.device_put(prompt, on[2]))
        # Every device holds the same number of bytes of each weight.
        for name, a in placed.items():
            per_device = {shard.data.nbytes for shard in a.addressable_shards}
            assert per_device == {layouts.bytes_per_device(args[0][name])}, name
        token, logits, after = step(placed, cache, token, 8)
        assert all(a.is_deleted() for a in cache.values()), layout
        assert token.sharding.spec == layouts.LAYOUTS[layout]["tokens"]
        assert logits.sharding.spec == layouts.LAYOUTS[layout]["tokens"]
        for a in after.values():
            assert a.sharding == on[1]["k"]
            assert {shard.data.nbytes for shard in a.addressable_shards} == {
                CACHE_BYTES // 16
            }


def test_a_batch_of_two_cannot_be_split_eight_ways(x_mesh, page_inputs, one_device):
    weights, prompt = page_inputs
    tokens = one_device[0][2]
    (small, got), printed = quietly(
        layouts.small_batch, x_mesh, weights, prompt, tokens
    )
    assert printed.startswith(
        "ValueError: The batch layout splits batch (2) over the 8 devices of axis 'x', "
        "and 2 is not a multiple of 8."
    )
    args, first, step = small["heads"]
    np.testing.assert_array_equal(got, tokens[:2])
    assert layouts.bytes_per_device(args[1]) == CACHE_BYTES // 4 // 8 == 8192
    assert all_reduce_shapes(step) == ["f32[2,1,128]"]
    assert all_reduce_shapes(first) == ["f32[2,8,128]"]
    rows = table_rows(printed)
    assert rows["per device"] == ["by heads, batch 2"]
    assert rows["cache bytes (k, v)"] == ["8,192"] == rows["aliased bytes"]
    assert printed.endswith("same tokens as rows 0 and 1 of the batch of 8: True\n")


def test_sizes_and_meshes_are_checked(x_mesh):
    with pytest.raises(ValueError, match=r"splits heads \(6\) over the 8 devices"):
        layouts.sharded(x_mesh, "heads", batch=8, heads=6)
    with pytest.raises(ValueError, match=r"splits batch \(12\) over the 8 devices"):
        layouts.sharded(x_mesh, "batch", batch=12)
    with pytest.raises(ValueError, match="Unknown layout 'sequence'"):
        layouts.sharded(x_mesh, "sequence", batch=8)
    other = jax.make_mesh((8,), ("model",), axis_types=(AxisType.Auto,))
    with pytest.raises(ValueError, match="split over a mesh axis 'x'"):
        layouts.sharded(other, "heads", batch=8)
    # 6 heads do split over 2 devices; 12 sequences over 4.
    four = jax.make_mesh((4,), ("x",), devices=jax.devices()[:4])
    layouts.sharded(four, "batch", batch=12)


def test_the_step_compiles_from_shapes_for_another_mesh():
    """What the page promises: shapes and shardings are enough, for any mesh with 'x'."""
    four = jax.make_mesh(
        (4,), ("x",), axis_types=(AxisType.Auto,), devices=jax.devices()[4:]
    )
    _, step, args = layouts.sharded(four, "heads", batch=8)
    compiled = step.lower(*args).compile()
    assert all_reduce_shapes(compiled) == ["f32[8,1,128]"]
    assert shard_shapes(args[1])["k"] == (8, 2, 32, 16)


def test_the_prose_quotes_the_run():
    text = " ".join(PAGE.read_text().split())
    assert "every device holds all 344,064 bytes of them" in text
    assert "the embeddings and unembedding whole, 114,688 bytes" in text
    assert (
        "sums a `f32[8,1,128]` array (batch \N{MULTIPLICATION SIGN} one token" in text
    )
    assert "the same for all 8 prompt tokens" in text
    assert "the 64 token ids" in text and decode.VOCAB == 64
