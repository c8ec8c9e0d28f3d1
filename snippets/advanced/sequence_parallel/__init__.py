"""Sequence and context parallelism: ring attention, and Megatron-style sequence parallelism."""
