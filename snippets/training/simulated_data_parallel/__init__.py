"""The data-parallel loop, simulated: a Python loop over batch shards, then jax.shard_map."""
