"""Collectives inside jax.shard_map, drawn device by device, and the HLO each becomes."""
