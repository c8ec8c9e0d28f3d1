"""Sharded inference: a KV cache, donated, split by batch or by heads."""
