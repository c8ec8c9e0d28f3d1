"""The home page's account of the diagrams: JAX draws them from a placed array, except on the
PartitionSpec page, which draws from a shape and a sharding alone."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_only_the_partition_spec_page_draws_from_a_shape_alone():
    from_shape = {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "snippets").rglob("*.py")
        if re.search(r"visualize_sharding\(", path.read_text(encoding="utf-8"))
    }
    assert from_shape == {"snippets/basics/partition_spec/spec_entries.py"}
    index = " ".join((ROOT / "docs" / "index.md").read_text(encoding="utf-8").split())
    assert "on the PartitionSpec page, from a shape and a sharding alone" in index
