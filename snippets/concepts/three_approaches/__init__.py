"""One dense layer, three ways: jax.jit on an Auto mesh, explicit sharding, jax.shard_map."""
