"""Migrating Flax NNX code: old spellings next to today's, both run."""
