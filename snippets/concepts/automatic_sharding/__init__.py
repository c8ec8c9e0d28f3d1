"""Automatic sharding with jax.jit: on Auto mesh axes the compiler propagates shardings."""
