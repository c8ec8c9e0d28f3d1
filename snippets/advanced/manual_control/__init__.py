"""Manual control, fully: partial-manual shard_map, varying types, a collective matmul."""
