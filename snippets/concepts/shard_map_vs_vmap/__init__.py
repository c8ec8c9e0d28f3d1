"""shard_map vs vmap: the same per-row computation, batched logically and sharded physically."""
