"""Manual SPMD with jax.shard_map: the per-device view, specs, check_vma and psum."""
